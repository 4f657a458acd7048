//! RocketMQ's version numbers: the `version` field of every Remoting frame
//! is the ordinal of Java's `MQVersion.Version` enum. The enum follows a
//! fixed pattern, so its names are computed here rather than listed:
//! sixteen 3.0.0 pre-releases, then a `_SNAPSHOT` and a release for each
//! version — 3.0.1 to 3.0.15, 3.1.0 to 3.2.9, 3.3.1 to 3.9.9 (no x.y.0
//! there), 4.0.0 to 5.9.9 — and last `HIGHER_VERSION`.

/// The 3.0.0 pre-releases, ordinals 0 to 15.
const PRE_RELEASES: [&str; 16] = [
    "V3_0_0_SNAPSHOT",
    "V3_0_0_ALPHA1",
    "V3_0_0_BETA1",
    "V3_0_0_BETA2",
    "V3_0_0_BETA3",
    "V3_0_0_BETA4",
    "V3_0_0_BETA5",
    "V3_0_0_BETA6_SNAPSHOT",
    "V3_0_0_BETA6",
    "V3_0_0_BETA7_SNAPSHOT",
    "V3_0_0_BETA7",
    "V3_0_0_BETA8_SNAPSHOT",
    "V3_0_0_BETA8",
    "V3_0_0_BETA9_SNAPSHOT",
    "V3_0_0_BETA9",
    "V3_0_0_FINAL",
];

/// A run of versions: every minor in `minors` with every patch in
/// `patches`, each version a snapshot and a release.
struct Run {
    major: u32,
    minors: (u32, u32),
    patches: (u32, u32),
}

/// The runs after the pre-releases, in enum order.
const RUNS: [Run; 4] = [
    Run {
        major: 3,
        minors: (0, 0),
        patches: (1, 15),
    },
    Run {
        major: 3,
        minors: (1, 2),
        patches: (0, 9),
    },
    Run {
        major: 3,
        minors: (3, 9),
        patches: (1, 9),
    },
    Run {
        major: 4,
        minors: (0, 19),
        patches: (0, 9),
    },
];

/// `HIGHER_VERSION`, the last name, for every ordinal past the table.
const HIGHER_VERSION: &str = "HIGHER_VERSION";

/// The name Java's `MQVersion.getVersionDesc` gives `ordinal`
/// (`V5_3_1`, `V4_9_4_SNAPSHOT`, ...). Negative ordinals, which no client
/// sends, read as the first name.
pub fn version_desc(ordinal: i32) -> String {
    let Ok(mut rest) = usize::try_from(ordinal) else {
        return PRE_RELEASES[0].to_string();
    };
    if rest < PRE_RELEASES.len() {
        return PRE_RELEASES[rest].to_string();
    }
    rest -= PRE_RELEASES.len();
    for run in RUNS {
        let (major, (minor_from, minor_to)) = (run.major, run.minors);
        let (patch_from, patch_to) = run.patches;
        let patches = (patch_to - patch_from + 1) as usize;
        let versions = (minor_to - minor_from + 1) as usize * patches;
        if rest < versions * 2 {
            let version = rest / 2;
            // Minors 10-19 of the 4.x run are 5.0-5.9.
            let minor = minor_from + (version / patches) as u32;
            let (major, minor) = (major + minor / 10, minor % 10);
            let patch = patch_from + (version % patches) as u32;
            let snapshot = if rest % 2 == 0 { "_SNAPSHOT" } else { "" };
            return format!("V{major}_{minor}_{patch}{snapshot}");
        }
        rest -= versions * 2;
    }
    HIGHER_VERSION.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ordinals_have_java_names() {
        assert_eq!(version_desc(0), "V3_0_0_SNAPSHOT");
        assert_eq!(version_desc(15), "V3_0_0_FINAL");
        assert_eq!(version_desc(16), "V3_0_1_SNAPSHOT");
        assert_eq!(version_desc(45), "V3_0_15");
        assert_eq!(version_desc(46), "V3_1_0_SNAPSHOT");
        assert_eq!(version_desc(85), "V3_2_9");
        assert_eq!(version_desc(86), "V3_3_1_SNAPSHOT");
        assert_eq!(version_desc(211), "V3_9_9");
        assert_eq!(version_desc(212), "V4_0_0_SNAPSHOT");
        // MQVersion.CURRENT_VERSION of the releases clients report.
        assert_eq!(version_desc(401), "V4_9_4");
        assert_eq!(version_desc(453), "V5_2_0");
        assert_eq!(version_desc(475), "V5_3_1");
        assert_eq!(version_desc(611), "V5_9_9");
        assert_eq!(version_desc(612), HIGHER_VERSION);
        assert_eq!(version_desc(10_000), HIGHER_VERSION);
        assert_eq!(version_desc(-1), "V3_0_0_SNAPSHOT");
    }
}
