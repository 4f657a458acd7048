//! Permission bits and their text (Java's `Permission`).

/// A set of permission bits.
pub type Perm = u8;

/// Denies whatever else is set.
pub const DENY: Perm = 1;
/// Either PUB or SUB suffices (asked for only by gRPC route queries).
pub const ANY: Perm = 2;
/// Send to a topic.
pub const PUB: Perm = 4;
/// Consume a topic, or as a group.
pub const SUB: Perm = 8;

/// Parses `PUB`, `SUB`, `PUB|SUB`, `SUB|PUB` or `DENY` (trimmed, case
/// sensitive); anything else, or nothing, is DENY, as in Java.
pub fn parse_perm(text: Option<&str>) -> Perm {
    match text.map(str::trim) {
        Some("PUB") => PUB,
        Some("SUB") => SUB,
        Some("PUB|SUB") | Some("SUB|PUB") => PUB | SUB,
        _ => DENY,
    }
}

/// Whether `owned` grants `needed`.
pub fn grants(needed: Perm, owned: Perm) -> bool {
    if owned & DENY != 0 {
        return false;
    }
    if needed & ANY != 0 {
        return owned & (PUB | SUB) != 0;
    }
    needed & owned != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perm_text_and_checks_follow_java() {
        assert_eq!(parse_perm(Some(" PUB|SUB ")), PUB | SUB);
        assert_eq!(parse_perm(Some("SUB|PUB")), PUB | SUB);
        assert_eq!(parse_perm(Some("pub")), DENY);
        assert_eq!(parse_perm(Some("PUB | SUB")), DENY);
        assert_eq!(parse_perm(Some("ANY")), DENY);
        assert_eq!(parse_perm(None), DENY);
        assert!(grants(PUB, PUB | SUB));
        assert!(!grants(SUB, PUB));
        assert!(!grants(PUB, DENY));
        assert!(grants(ANY, SUB));
        assert!(!grants(ANY, DENY));
    }
}
