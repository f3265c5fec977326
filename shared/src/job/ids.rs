//! Job ids: ULIDs, so ids sort by creation time (handy in D1 indexes and
//! listings) and the id can be minted before the row is written.

use ulid::Ulid;

/// A 26-character ULID from a Unix-ms time and 80 bits of `random` (higher bits
/// are ignored). Times before 1970 are clamped to the epoch.
pub fn job_id(now_ms: i64, random: u128) -> String {
    let ms = u64::try_from(now_ms).unwrap_or(0);
    Ulid::from_parts(ms, random).to_string()
}

/// A random (version 4) UUID in its textual form, from 16 random bytes: the ids of RSS sources.
pub fn uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(job_id(0, 0), "00000000000000000000000000");
        assert_eq!(job_id(1_469_918_176_385, 0), "01ARYZ6S410000000000000000");
        assert_eq!(job_id(-5, 0), job_id(0, 0));
        // Only the low 80 bits of `random` are used (checked with a Python encoder).
        assert_eq!(
            job_id(1_700_000_000_000, u128::MAX),
            "01HF7YAT00ZZZZZZZZZZZZZZZZ"
        );
    }

    #[test]
    fn sorts_by_time_then_randomness() {
        let a = job_id(1_700_000_000_000, u128::MAX);
        let b = job_id(1_700_000_000_001, 0);
        let c = job_id(1_700_000_000_001, 1);
        assert_eq!(a.len(), 26);
        assert!(a < b && b < c);
    }

    #[test]
    fn uuid_v4_sets_version_and_variant() {
        assert_eq!(uuid_v4([0xff; 16]), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        assert_eq!(uuid_v4([0; 16]), "00000000-0000-4000-8000-000000000000");
    }
}
