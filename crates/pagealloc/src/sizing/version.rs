//! Which Linux release's rules to follow: the derived parameters and the /proc/zoneinfo
//! layout changed across 6.x (see each predicate).

use core::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinuxVersion {
    pub major: u16,
    pub minor: u16,
}

impl Default for LinuxVersion {
    /// Mainline as of our reading (~6.18).
    fn default() -> Self {
        LinuxVersion::MAINLINE
    }
}

impl fmt::Display for LinuxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl LinuxVersion {
    pub const MAINLINE: LinuxVersion = LinuxVersion::new(6, 18);
    /// The oldest release modelled: 5.0 merged watermark boosting (the 2018
    /// fragmentation-avoidance series), which every sizing here assumes.
    pub const OLDEST: LinuxVersion = LinuxVersion::new(5, 0);

    pub const fn new(major: u16, minor: u16) -> LinuxVersion {
        LinuxVersion { major, minor }
    }

    /// Parses "6.8", "6.8.12" or "mainline"; anything else (a fourth part, a non-number)
    /// is None. Says nothing of whether the release is modelled: see [`Self::is_modelled`].
    pub fn parse(text: &str) -> Option<LinuxVersion> {
        if text.eq_ignore_ascii_case("mainline") {
            return Some(LinuxVersion::MAINLINE);
        }
        let mut parts = text.split('.').map(|part| part.parse::<u16>().ok());
        let (major, minor) = (parts.next()??, parts.next()??);
        // An optional third number (the stable release), nothing after it.
        if parts.next().is_some_and(|patch| patch.is_none()) || parts.next().is_some() {
            return None;
        }
        Some(LinuxVersion { major, minor })
    }

    /// Whether the rules here cover this release: [`Self::OLDEST`] to [`Self::MAINLINE`].
    pub fn is_modelled(self) -> bool {
        self.at_least(Self::OLDEST.major, Self::OLDEST.minor) && Self::MAINLINE.at_least(self.major, self.minor)
    }

    const fn at_least(self, major: u16, minor: u16) -> bool {
        self.major > major || (self.major == major && self.minor >= minor)
    }

    /// Before 6.6 ZONE_MOVABLE counted as lowmem for min_free_kbytes sharing and got a
    /// proportional min watermark; since, it gets the small clamped min.
    pub const fn movable_shares_min_free(self) -> bool {
        !self.at_least(6, 6)
    }

    /// Since 6.7 each pageset has high_min/high_max and an auto-tuned high.
    pub const fn pcp_high_autotuned(self) -> bool {
        self.at_least(6, 7)
    }

    /// 6.10 to 6.13 left lowmem_reserve at 0 for an empty upper zone (reverted in 6.14 and
    /// in the 6.12.y/6.13.y stable trees).
    pub const fn lowmem_reserve_skips_empty_upper(self) -> bool {
        self.at_least(6, 10) && !self.at_least(6, 14)
    }

    /// Since 6.13 lowmem_reserve is recomputed whenever managed pages change, so it follows
    /// the final managed counts rather than the boot-time ones.
    pub const fn lowmem_reserve_tracks_managed(self) -> bool {
        self.at_least(6, 13)
    }

    /// /proc/zoneinfo prints the promo watermark since 6.12.
    pub const fn zoneinfo_has_promo(self) -> bool {
        self.at_least(6, 12)
    }

    /// /proc/zoneinfo prints widened pageset lines with high_min/high_max since 6.13.
    pub const fn zoneinfo_has_pcp_bounds(self) -> bool {
        self.at_least(6, 13)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        assert_eq!(LinuxVersion::parse("6.8.12"), Some(LinuxVersion::new(6, 8)));
        assert_eq!(LinuxVersion::parse("mainline"), Some(LinuxVersion::MAINLINE));
        assert_eq!(LinuxVersion::parse("six"), None);
        assert_eq!(LinuxVersion::parse("6.8.x"), None);
        assert_eq!(LinuxVersion::parse("6.8.1.2"), None);
        assert_eq!(LinuxVersion::parse("6"), None);
        assert!(LinuxVersion::new(6, 18).is_modelled() && LinuxVersion::new(5, 0).is_modelled());
        assert!(!LinuxVersion::new(9, 9).is_modelled() && !LinuxVersion::new(4, 20).is_modelled());
        assert!(!LinuxVersion::new(6, 19).is_modelled());
        assert!(LinuxVersion::new(6, 11).lowmem_reserve_skips_empty_upper());
        assert!(!LinuxVersion::new(6, 14).lowmem_reserve_skips_empty_upper());
        assert!(LinuxVersion::new(6, 5).movable_shares_min_free());
        assert!(!LinuxVersion::new(6, 6).pcp_high_autotuned());
    }
}
