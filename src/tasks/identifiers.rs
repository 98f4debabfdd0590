//! Structured identifiers found by rules: e-mail, phone, IBAN, payment card, IPv4/IPv6 and US
//! SSN. Each candidate a regex finds is validated (`checksums.rs`, standing alone in the text)
//! before it counts. Offsets are bytes.

use super::checksums::{valid_card, valid_iban, IBAN_LENGTHS};
use regex::Regex;
use std::sync::OnceLock;

pub(crate) type Finder = fn(&str) -> Vec<(usize, usize)>;

/// Built-in kinds in order of precedence among equally long overlapping matches.
pub(crate) const BUILTIN: [(&str, Finder); 7] = [
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
