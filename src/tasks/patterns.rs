//! Structured identifiers found by rules beside the model: e-mail, phone, IBAN (mod 97 and the
//! country's length), payment card (Luhn, issuer prefixes and lengths), IPv4/IPv6, US SSN, and
//! the caller's own regular expressions. Each candidate a regex finds is validated before it
//! counts. Offsets are Unicode code points.

use super::entity::{Entity, Source};
use crate::error::{Error, Result};
use regex::Regex;
use std::sync::OnceLock;

/// A caller's pattern: every match of `regex` is an entity of type `label`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomPattern {
    pub label: String,
    pub regex: String,
}

/// The pattern layer: the built-in identifiers (`builtin`) and the caller's patterns.
#[derive(Debug, Clone, Default)]
pub struct Patterns {
    pub builtin: bool,
    custom: Vec<(String, Regex)>,
}

impl Patterns {
    pub fn new(builtin: bool, custom: &[CustomPattern]) -> Result<Patterns> {
        let mut compiled = Vec::with_capacity(custom.len());
        for p in custom {
            if p.label.trim().is_empty() {
                return Err(Error::Input(format!(
                    "pattern `{}` needs a label (the entity type it finds)",
                    p.regex
                )));
            }
            let re = regex::RegexBuilder::new(&p.regex)
                .size_limit(1 << 22)
                .build()
                .map_err(|e| Error::Input(format!("pattern {}: {e}", p.label)))?;
            compiled.push((p.label.clone(), re));
        }
        Ok(Patterns {
            builtin,
            custom: compiled,
        })
    }

    pub fn is_empty(&self) -> bool {
        !self.builtin && self.custom.is_empty()
    }

    /// Every validated match, overlaps resolved (longest first, then the earlier kind),
    /// in text order.
    pub fn find(&self, text: &str) -> Vec<Entity> {
        let mut found: Vec<(usize, usize, usize, String)> = Vec::new(); // bytes, kind, label
        if self.builtin {
            for (kind, (label, finder)) in BUILTIN.iter().enumerate() {
                for (s, e) in finder(text) {
                    found.push((s, e, kind, label.to_string()));
                }
            }
        }
        for (i, (label, re)) in self.custom.iter().enumerate() {
            for m in re.find_iter(text).filter(|m| !m.as_str().trim().is_empty()) {
                found.push((m.start(), m.end(), BUILTIN.len() + i, label.clone()));
            }
        }
        found.sort_by_key(|&(s, e, kind, _)| (s, std::cmp::Reverse(e - s), kind));
        let mut kept: Vec<(usize, usize, usize, String)> = Vec::new();
        // Longest first wins its place; a shorter match overlapping a kept one is dropped.
        let mut by_len = found.clone();
        by_len.sort_by_key(|&(s, e, kind, _)| (std::cmp::Reverse(e - s), kind, s));
        for m in by_len {
            if kept.iter().all(|k| m.1 <= k.0 || k.1 <= m.0) {
                kept.push(m);
            }
        }
        kept.sort_by_key(|&(s, e, _, _)| (s, e));
        let cp = CodePoints::new(text);
        kept.into_iter()
            .map(|(s, e, _, label)| Entity {
                entity: None,
                entity_group: Some(label),
                score: 1.0,
                index: None,
                word: text[s..e].to_string(),
                start: cp.at(s),
                end: cp.at(e),
                source: Some(Source::Pattern),
            })
            .collect()
    }
}

/// Byte offset → code-point index, for offsets on char boundaries.
struct CodePoints {
    starts: Vec<usize>,
}

impl CodePoints {
    fn new(text: &str) -> Self {
        let mut starts: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        starts.push(text.len());
        CodePoints { starts }
    }

    fn at(&self, byte: usize) -> usize {
        self.starts.partition_point(|&b| b < byte)
    }
}

/// The model's entities with the pattern layer's: a pattern match wins over any model entity
/// it overlaps, which keeps only its parts outside the match (if they hold a letter or digit).
/// Text order, then the longer first.
pub fn merge(text: &str, model: Vec<Entity>, patterns: Vec<Entity>) -> Vec<Entity> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<Entity> = Vec::with_capacity(model.len() + patterns.len());
    for mut e in model {
        e.source = Some(Source::Model);
        let mut pieces = vec![(e.start, e.end)];
        for p in &patterns {
            pieces = pieces
                .into_iter()
                .flat_map(|(s, t)| {
                    if t <= p.start || p.end <= s {
                        return vec![(s, t)];
                    }
                    [(s, p.start.max(s)), (p.end.min(t), t)]
                        .into_iter()
                        .filter(|&(a, b)| a < b)
                        .collect()
                })
                .collect();
        }
        let whole = pieces == [(e.start, e.end)];
        for (s, t) in pieces {
            let part = &chars[s.min(chars.len())..t.min(chars.len())];
            if !part.iter().any(|c| c.is_alphanumeric()) {
                continue;
            }
            let mut piece = e.clone();
            if !whole {
                (piece.start, piece.end) = (s, t);
                piece.word = part.iter().collect();
            }
            out.push(piece);
        }
    }
    out.extend(patterns);
    out.sort_by_key(|e| (e.start, std::cmp::Reverse(e.end)));
    out
}

type Finder = fn(&str) -> Vec<(usize, usize)>;

/// Built-in kinds in order of precedence among equally long overlapping matches.
const BUILTIN: [(&str, Finder); 7] = [
    ("EMAIL", emails),
    ("IBAN", ibans),
    ("CREDIT_CARD", cards),
    ("IP_ADDRESS", ipv6s),
    ("IP_ADDRESS", ipv4s),
    ("SSN", ssns),
    ("PHONE", phones),
];

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("built-in pattern"))
}

/// Whether the match `[s, e)` stands alone: no letter or digit right before or after it, nor
/// one of `joiners` that itself touches a letter or digit (`1.5`, `a-b`; not a full stop).
fn isolated(text: &str, s: usize, e: usize, joiners: &str) -> bool {
    let glued = |mut side: std::iter::Peekable<&mut dyn Iterator<Item = char>>| match side.next() {
        Some(c) if c.is_alphanumeric() => true,
        Some(c) if joiners.contains(c) => side.peek().is_some_and(|c| c.is_alphanumeric()),
        _ => false,
    };
    let before: &mut dyn Iterator<Item = char> = &mut text[..s].chars().rev();
    let after: &mut dyn Iterator<Item = char> = &mut text[e..].chars();
    !glued(before.peekable()) && !glued(after.peekable())
}

fn emails(text: &str) -> Vec<(usize, usize)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(
        &RE,
        r"[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+(?:\.[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+)*@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+\p{L}[\p{L}\p{N}-]*\p{L}",
    );
    re.find_iter(text)
        .filter(|m| {
            let local = m.as_str().split('@').next().unwrap_or_default();
            local.len() <= 64 && isolated(text, m.start(), m.end(), "@")
        })
        .map(|m| (m.start(), m.end()))
        .collect()
}

/// IBAN lengths by country (SWIFT's IBAN registry).
const IBAN_LENGTHS: &[(&str, usize)] = &[
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

fn ibans(text: &str) -> Vec<(usize, usize)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // Upper-case IBANs, printed in groups of four or in one piece.
    let re = regex(&RE, r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}");
    let mut out = Vec::new();
    for m in re.find_iter(text) {
        let Some(&(_, len)) = IBAN_LENGTHS.iter().find(|(c, _)| &m.as_str()[..2] == *c) else {
            continue;
        };
        // The country's length in characters, spaces skipped: the match may run on.
        let (mut n, mut end, mut compact) = (0, m.start(), String::new());
        for (i, c) in m.as_str().char_indices() {
            if c != ' ' {
                n += 1;
                compact.push(c);
                end = m.start() + i + 1;
                if n == len {
                    break;
                }
            }
        }
        if n == len && valid_iban(&compact) && isolated(text, m.start(), end, "") {
            out.push((m.start(), end));
        }
    }
    out
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

fn cards(text: &str) -> Vec<(usize, usize)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    // Digits in one piece or in groups split by single spaces or hyphens.
    let re = regex(
        &RE,
        r"\b[0-9]{2,6}(?:[ -]?[0-9]{2,6}){1,5}\b|\b[0-9]{12,19}\b",
    );
    re.find_iter(text)
        .filter(|m| {
            let seps: Vec<char> = m.as_str().chars().filter(|c| !c.is_ascii_digit()).collect();
            let digits: String = m.as_str().chars().filter(char::is_ascii_digit).collect();
            seps.windows(2).all(|w| w[0] == w[1])
                && valid_card(&digits)
                && isolated(text, m.start(), m.end(), "-.")
        })
        .map(|m| (m.start(), m.end()))
        .collect()
}

fn ipv4s(text: &str) -> Vec<(usize, usize)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(&RE, r"\b[0-9]{1,3}(?:\.[0-9]{1,3}){3}\b");
    re.find_iter(text)
        .filter(|m| {
            // Not part of a longer dotted number (a version such as 1.2.3.4.5).
            let next_two: String = text[m.end()..].chars().take(2).collect();
            let prev_two: String = text[..m.start()].chars().rev().take(2).collect();
            let dotted =
                |s: &str| s.starts_with('.') && s[1..].starts_with(|c: char| c.is_ascii_digit());
            m.as_str().parse::<std::net::Ipv4Addr>().is_ok()
                && !dotted(&next_two)
                && !dotted(&prev_two)
        })
        .map(|m| (m.start(), m.end()))
        .collect()
}

fn ipv6s(text: &str) -> Vec<(usize, usize)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(&RE, r"(?i)[0-9a-f:]*:[0-9a-f:]*:[0-9a-f:.]*[0-9a-f]|::");
    re.find_iter(text)
        .filter_map(|m| {
            let s = m.as_str();
            let hex = s.chars().filter(char::is_ascii_hexdigit).count();
            let ok = hex >= 2
                && s.parse::<std::net::Ipv6Addr>().is_ok()
                && isolated(text, m.start(), m.end(), ":");
            ok.then_some((m.start(), m.end()))
        })
        .collect()
}

fn ssns(text: &str) -> Vec<(usize, usize)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = regex(&RE, r"\b([0-9]{3})-([0-9]{2})-([0-9]{4})\b");
    re.captures_iter(text)
        .filter(|c| {
            let area: u32 = c[1].parse().unwrap_or(0);
            area != 0 && area != 666 && area < 900 && &c[2] != "00" && &c[3] != "0000"
        })
        .filter_map(|c| c.get(0))
        .filter(|m| isolated(text, m.start(), m.end(), "-"))
        .map(|m| (m.start(), m.end()))
        .collect()
}

/// Phone numbers: international (`+` or `00`, a country code, 8 to 15 digits in all, as E.164
/// allows) and national (a trunk `0` and 9 to 11 digits, or the North American 3-3-4), grouped
/// by spaces, hyphens, dots or parentheses.
fn phones(text: &str) -> Vec<(usize, usize)> {
    static INTL: OnceLock<Regex> = OnceLock::new();
    static NATIONAL: OnceLock<Regex> = OnceLock::new();
    static NANP: OnceLock<Regex> = OnceLock::new();
    let intl = regex(
        &INTL,
        r"(?:\+|\b00)[1-9][0-9]{0,2}(?:[ .-]?\(0\))?(?:[ .-]?\(?[0-9]{1,5}\)?){2,7}",
    );
    let national = regex(
        &NATIONAL,
        r"\(?\b0[0-9]{1,5}\)?(?:[ ./-]?[0-9]{2,5}){2,5}\b",
    );
    let nanp = regex(
        &NANP,
        r"(?:\+?1[ .-]?)?(?:\([2-9][0-9]{2}\)|\b[2-9][0-9]{2})[ .-]?[2-9][0-9]{2}[ .-][0-9]{4}\b",
    );
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).count();
    let mut out = Vec::new();
    for m in intl.find_iter(text) {
        // The trunk zero in `+41 (0)44` is not dialled.
        let n = digits(m.as_str()) - m.as_str().contains("(0)") as usize;
        let n = if m.as_str().starts_with("00") {
            n - 2
        } else {
            n
        };
        let e = m.as_str().trim_end_matches(['(', ' ', '.', '-']).len() + m.start();
        if (8..=15).contains(&n) && isolated(text, m.start(), e, "") {
            out.push((m.start(), e));
        }
    }
    let taken =
        |s: usize, e: usize, out: &[(usize, usize)]| out.iter().any(|&(a, b)| s < b && a < e);
    for m in national.find_iter(text).chain(nanp.find_iter(text)) {
        let s = m.as_str();
        let n = digits(s);
        let grouped = s.contains([' ', '-', '.', '/', '(']);
        // Not an SSN, nor a date followed by a number (`01.02.2023 15`).
        static NOT_PHONE: OnceLock<Regex> = OnceLock::new();
        let not_phone = regex(
            &NOT_PHONE,
            r"^[0-9]{3}-[0-9]{2}-[0-9]{4}$|^[0-3]?[0-9][./-][01]?[0-9][./-](?:19|20)[0-9]{2}",
        );
        if not_phone.is_match(s) {
            continue;
        }
        let ok = if s.trim_start_matches('(').starts_with('0') {
            (9..=11).contains(&n) && grouped
        } else {
            n == 10 || n == 11
        };
        if ok && !taken(m.start(), m.end(), &out) && isolated(text, m.start(), m.end(), "") {
            out.push((m.start(), m.end()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String)> {
        let p = Patterns::new(true, &[]).unwrap();
        p.find(text)
            .into_iter()
            .map(|e| (e.entity_group.unwrap(), e.word))
            .collect()
    }

    #[test]
    fn ibans_from_the_registry_pass_and_altered_ones_fail() {
        // Examples published in SWIFT's IBAN registry and by the national banks.
        for iban in [
            "GB29NWBK60161331926819",
            "DE89370400440532013000",
            "FR1420041010050500013M02606",
            "CH9300762011623852957",
            "NL91ABNA0417164300",
            "BE68539007547034",
            "NO9386011117947",
            "ES9121000418450200051332",
            "IT60X0542811101000000123456",
            "AT611904300234573201",
            "PL61109010140000071219812874",
            "SE4550000000058398257466",
            "DK5000400440116243",
            "FI2112345600000785",
            "MT84MALT011000012345MTLCAST001S",
            "SA0380000000608010167519",
        ] {
            assert!(valid_iban(iban), "{iban}");
            let mut wrong = iban.to_string().into_bytes();
            let last = wrong.len() - 1;
            wrong[last] = if wrong[last] == b'0' { b'1' } else { b'0' };
            assert!(
                !valid_iban(std::str::from_utf8(&wrong).unwrap()),
                "{iban} altered"
            );
        }
        assert!(!valid_iban("DE8937040044053201300")); // one short
        assert_eq!(
            found("IBAN DE89 3704 0044 0532 0130 00 ABC"),
            [("IBAN".into(), "DE89 3704 0044 0532 0130 00".into())]
        );
    }

    #[test]
    fn luhn_test_card_numbers() {
        // The networks' published test numbers.
        for card in [
            "4111111111111111",
            "4012888888881881",
            "4222222222222",
            "5555555555554444",
            "5105105105105100",
            "2223003122003222",
            "378282246310005",
            "371449635398431",
            "6011111111111117",
            "6011000990139424",
            "3530111333300000",
            "3566002020360505",
            "30569309025904",
            "38520000023237",
            "6200000000000005",
        ] {
            assert!(valid_card(card), "{card}");
            let wrong = format!(
                "{}{}",
                &card[..card.len() - 1],
                (card.as_bytes()[card.len() - 1] - b'0' + 1) % 10
            );
            assert!(!valid_card(&wrong), "{wrong}");
        }
        assert!(!valid_card("1234567812345670")); // Luhn-valid, no issuer
        assert_eq!(
            found("card 4111 1111 1111 1111, or 3782-822463-10005."),
            [
                ("CREDIT_CARD".into(), "4111 1111 1111 1111".into()),
                ("CREDIT_CARD".into(), "3782-822463-10005".into())
            ]
        );
    }

    #[test]
    fn phones_international_and_national() {
        // E.164 examples (ITU-T E.164 and national numbering plans' documentation ranges).
        for (text, want) in [
            ("call +41 44 123 45 67.", "+41 44 123 45 67"),
            ("call +14155552671 now", "+14155552671"),
            ("ring +44 20 7946 0958", "+44 20 7946 0958"),
            ("Tel. +49 (0)30 901820", "+49 (0)30 901820"),
            ("Tel 0041 44 668 18 00", "0041 44 668 18 00"),
            ("call 044 668 18 00 today", "044 668 18 00"),
            ("call (415) 555-2671 today", "(415) 555-2671"),
            ("or 212-555-0123.", "212-555-0123"),
            ("+33 1 09 75 83 51", "+33 1 09 75 83 51"),
        ] {
            assert_eq!(found(text), [("PHONE".into(), want.into())], "{text}");
        }
        for text in [
            "on 2024-01-15 at 10:30",
            "on 01/02/2023 15 people came",
            "am 03.04.2024 12 Uhr",
            "order 12345",
            "page 1 of 2",
            "v1.2.3",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn emails_ips_and_ssns() {
        assert_eq!(
            found("Write to zoë.müller@beispiel.de, or ip 192.168.0.1 / 2001:db8::8a2e:370:7334; SSN 123-45-6789."),
            [
                ("EMAIL".into(), "zoë.müller@beispiel.de".into()),
                ("IP_ADDRESS".into(), "192.168.0.1".into()),
                ("IP_ADDRESS".into(), "2001:db8::8a2e:370:7334".into()),
                ("SSN".into(), "123-45-6789".into()),
            ]
        );
        for text in [
            "version 1.2.3.4.5",
            "999.1.1.1",
            "at 12:30:45",
            "SSN 000-12-3456",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn custom_patterns_and_bad_regexes() {
        let p = Patterns::new(
            false,
            &[CustomPattern {
                label: "EMPLOYEE_ID".into(),
                regex: r"EMP-\d{6}".into(),
            }],
        )
        .unwrap();
        let got = p.find("ID 😀 EMP-123456.");
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].start, got[0].end), (5, 15));
        let bad = CustomPattern {
            label: "X".into(),
            regex: "(".into(),
        };
        assert!(Patterns::new(false, &[bad]).is_err());
    }

    #[test]
    fn pattern_wins_and_model_keeps_the_rest() {
        let text = "mail zoë.müller@beispiel.de now";
        let p = Patterns::new(true, &[]).unwrap().find(text);
        let model = |label: &str, s, e| Entity {
            entity: None,
            entity_group: Some(label.into()),
            score: 0.9,
            index: None,
            word: String::new(),
            start: s,
            end: e,
            source: None,
        };
        // A name over the e-mail's local part, a phone label over the e-mail and the next word.
        let merged = merge(
            text,
            vec![model("GIVEN_NAME", 5, 8), model("PHONE", 16, 31)],
            p,
        );
        let got: Vec<_> = merged
            .iter()
            .map(|e| (e.label().to_string(), e.start, e.end, e.source))
            .collect();
        assert_eq!(
            got,
            [
                ("EMAIL".into(), 5, 27, Some(Source::Pattern)),
                ("PHONE".into(), 27, 31, Some(Source::Model)),
            ]
        );
    }
}
