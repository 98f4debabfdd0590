//! Byte counts as people read and write them: in errors (`1.5 GiB`) and in options
//! (`WEBERT_MEMORY_BUDGET=1.5G`). Imports nothing of the crate: the error type uses it.

/// `bytes` as a short human figure (`1.5 GiB`); `None` is past 2^64 bytes.
pub fn show(bytes: Option<u64>) -> String {
    let Some(b) = bytes else {
        return "more than 2^64 bytes".into();
    };
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match units.iter().find(|(_, u)| b >= *u) {
        Some((name, u)) => format!("{:.1} {name}", b as f64 / *u as f64),
        None => format!("{b} bytes"),
    }
}

/// A byte count as written by a person: `1073741824`, `512M`, `1.5G`, `2GiB` (K, M, G, T are
/// powers of 1024).
pub fn parse(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, unit) = match t.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_uppercase()),
        _ => (t, ' '),
    };
    let scale = match unit {
        ' ' => 1u64,
        'K' => 1 << 10,
        'M' => 1 << 20,
        'G' => 1 << 30,
        'T' => 1 << 40,
        _ => return None,
    };
    let v: f64 = num.trim().parse().ok()?;
    let bytes = v * scale as f64;
    (v.is_finite() && v >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_shown_in_the_largest_unit_they_reach() {
        assert_eq!(show(Some(3 << 29)), "1.5 GiB");
        assert_eq!(show(Some(512)), "512 bytes");
        assert_eq!(show(None), "more than 2^64 bytes");
    }

    #[test]
    fn budgets_parse_as_people_write_them() {
        assert_eq!(parse("1048576"), Some(1 << 20));
        assert_eq!(parse("512M"), Some(512 << 20));
        assert_eq!(parse("1.5G"), Some(3 << 29));
        assert_eq!(parse("2GiB"), Some(2 << 30));
        assert_eq!(parse("64k"), Some(64 << 10));
        for bad in ["", "G", "-1G", "lots", "1X", "nanG", "1e30T"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
