//! "Did you mean ...?": the known name closest to a misspelt one, for
//! settings given in a file, on a command line or online.

/// Most edits a misspelling may be from the key it is taken for.
const SUGGEST_EDITS_MAX: usize = 3;

/// The known key closest to `unknown`, if it is close enough to be the
/// one meant: same letters in another case, or a few edits away.
pub fn closest<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    let unknown_lower = unknown.to_ascii_lowercase();
    let edits_max = SUGGEST_EDITS_MAX.min(unknown.len() / 3).max(1);
    known
        .iter()
        .map(|key| {
            (
                edit_distance(&unknown_lower, &key.to_ascii_lowercase()),
                *key,
            )
        })
        .filter(|(edits, _)| *edits <= edits_max)
        .min_by_key(|(edits, _)| *edits)
        .map(|(_, key)| key)
}

/// Levenshtein distance over bytes (keys are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}
