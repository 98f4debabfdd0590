//! The checksums and registries that tell a real identifier from digits that look like one:
//! IBAN (mod 97 and the country's length) and payment card (Luhn, issuer prefixes and lengths).

/// IBAN lengths by country (SWIFT's IBAN registry).
pub(crate) const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24),
    ("AE", 23),
    ("AL", 28),
    ("AT", 20),
    ("AZ", 28),
    ("BA", 20),
    ("BE", 16),
    ("BG", 22),
    ("BH", 22),
    ("BI", 27),
    ("BR", 29),
    ("BY", 28),
    ("CH", 21),
    ("CR", 22),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DJ", 27),
    ("DK", 18),
    ("DO", 28),
    ("EE", 20),
    ("EG", 29),
    ("ES", 24),
    ("FI", 18),
    ("FK", 18),
    ("FO", 18),
    ("FR", 27),
    ("GB", 22),
    ("GE", 22),
    ("GI", 23),
    ("GL", 18),
    ("GR", 27),
    ("GT", 28),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IL", 23),
    ("IQ", 23),
    ("IS", 26),
    ("IT", 27),
    ("JO", 30),
    ("KW", 30),
    ("KZ", 20),
    ("LB", 28),
    ("LC", 32),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("LY", 25),
    ("MC", 27),
    ("MD", 24),
    ("ME", 22),
    ("MK", 19),
    ("MN", 20),
    ("MR", 27),
    ("MT", 31),
    ("MU", 30),
    ("NI", 28),
    ("NL", 18),
    ("NO", 15),
    ("OM", 23),
    ("PK", 24),
    ("PL", 28),
    ("PS", 29),
    ("PT", 25),
    ("QA", 29),
    ("RO", 24),
    ("RS", 22),
    ("RU", 33),
    ("SA", 24),
    ("SC", 31),
    ("SD", 18),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("SO", 23),
    ("ST", 25),
    ("SV", 28),
    ("TL", 23),
    ("TN", 24),
    ("TR", 26),
    ("UA", 29),
    ("VA", 22),
    ("VG", 24),
    ("XK", 20),
    ("YE", 30),
];

/// An IBAN without spaces: a registered country, its length, and remainder 1 mod 97.
pub fn valid_iban(iban: &str) -> bool {
    let b = iban.as_bytes();
    let Some(&(_, len)) = IBAN_LENGTHS.iter().find(|(c, _)| iban.get(..2) == Some(c)) else {
        return false;
    };
    if b.len() != len
        || !b[2..4].iter().all(u8::is_ascii_digit)
        || !b
            .iter()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    {
        return false;
    }
    let rotated = b[4..].iter().chain(&b[..4]);
    let rem = rotated.fold(0u32, |r, &c| {
        let v = if c.is_ascii_digit() {
            (c - b'0') as u32
        } else {
            (c - b'A') as u32 + 10
        };
        if v >= 10 {
            (r * 100 + v) % 97
        } else {
            (r * 10 + v) % 97
        }
    });
    rem == 1
}

/// The Luhn checksum over a string of digits.
pub fn luhn(digits: &str) -> bool {
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, c)| {
            let d = (c - b'0') as u32;
            if i % 2 == 1 {
                if d > 4 {
                    d * 2 - 9
                } else {
                    d * 2
                }
            } else {
                d
            }
        })
        .sum();
    !digits.is_empty() && sum.is_multiple_of(10)
}

/// A card number (digits only): an issuer's prefix and length, and the Luhn checksum.
pub fn valid_card(d: &str) -> bool {
    let n = d.len();
    let p = |k: usize| d[..k.min(n)].parse::<u32>().unwrap_or(0);
    let issuer = match d.as_bytes().first() {
        Some(b'4') => matches!(n, 13 | 16 | 19), // Visa
        Some(b'5') => (51..=55).contains(&p(2)) && n == 16 || p(2) == 50 && n >= 12, // Mastercard, Maestro
        Some(b'2') => (2221..=2720).contains(&p(4)) && n == 16,                      // Mastercard
        Some(b'3') => {
            (matches!(p(2), 34 | 37) && n == 15)                              // Amex
                || ((300..=305).contains(&p(3)) || matches!(p(2), 36 | 38 | 39)) && (14..=19).contains(&n) // Diners
                || (3528..=3589).contains(&p(4)) && (16..=19).contains(&n) // JCB
        }
        Some(b'6') => (16..=19).contains(&n) || n >= 12 && matches!(p(2), 56..=69), // Discover, UnionPay, Maestro
        _ => false,
    };
    (12..=19).contains(&n) && issuer && luhn(d)
}
