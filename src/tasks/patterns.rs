//! The pattern layer beside the model: the built-in identifiers (`identifiers.rs`) and the
//! caller's own regular expressions, found in a text and merged with the model's entities.
//! Offsets are Unicode code points.

use super::entity::{Entity, Source};
use super::identifiers::BUILTIN;
use crate::error::{Error, Result};
use regex::Regex;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::checksums::{valid_card, valid_iban};

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
