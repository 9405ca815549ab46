//! Roles, actions and the permission matrix of the console.
//!
//! | action | viewer | admin | owner |
//! | --- | --- | --- | --- |
//! | read reports, list goals and funnels ([`Action::Read`]) | yes | yes | yes |
//! | configure: site settings, goals, funnels, shared links, own API keys ([`Action::Configure`]) | no | yes | yes |
//! | members, invites, the audit log, deleting the site ([`Action::ManageMembers`], [`Action::ReadAudit`], [`Action::DeleteSite`]) | no | no | yes |
//!
//! An instance owner acts as [`Role::Owner`] on every site ([`site_role`])
//! and alone may create sites, change the instance settings and make
//! password reset links ([`InstanceAction`]). API keys carry a
//! [`KeyScope`]: `read` keys read, `configure` keys also configure their
//! site, `write` keys read and record trusted conversions; none manages
//! members.

use serde::{Deserialize, Serialize};

/// A user's role on one site, weakest first (the order is the matrix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads reports.
    Viewer,
    /// Reads and configures the site.
    Admin,
    /// Everything, members and deletion included.
    Owner,
}

/// Something a user may do on one site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Read reports, list goals and funnels.
    Read,
    /// Change site settings (domains, time zone, exclusions, retention,
    /// history), goals, funnels, shared links, one's own API keys.
    Configure,
    /// Add, change and remove members; create and revoke invites.
    ManageMembers,
    /// Read the site's audit log.
    ReadAudit,
    /// Delete the site.
    DeleteSite,
}

impl Action {
    /// Every action.
    pub const ALL: [Self; 5] = [
        Self::Read,
        Self::Configure,
        Self::ManageMembers,
        Self::ReadAudit,
        Self::DeleteSite,
    ];

    /// The weakest role allowed to do it.
    pub fn least_role(self) -> Role {
        match self {
            Self::Read => Role::Viewer,
            Self::Configure => Role::Admin,
            Self::ManageMembers | Self::ReadAudit | Self::DeleteSite => Role::Owner,
        }
    }
}

/// Something only an instance owner may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstanceAction {
    /// Create a site.
    CreateSite,
    /// Change the instance settings (`require_2fa`).
    ChangeSettings,
    /// Make a password reset link for any user.
    ResetPasswords,
}

impl Role {
    /// Every role, weakest first.
    pub const ALL: [Self; 3] = [Self::Viewer, Self::Admin, Self::Owner];

    /// Whether this role may do `action`.
    pub fn allows(self, action: Action) -> bool {
        self >= action.least_role()
    }

    /// The role's name as stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Admin => "admin",
            Self::Owner => "owner",
        }
    }

    /// Parses [`Role::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// The role a user acts with on a site: [`Role::Owner`] for an instance
/// owner, else their membership's role, else none.
pub fn site_role(instance_owner: bool, membership: Option<Role>) -> Option<Role> {
    if instance_owner {
        Some(Role::Owner)
    } else {
        membership
    }
}

/// Whether a user may do an instance-wide action.
pub fn instance_allows(instance_owner: bool, _action: InstanceAction) -> bool {
    instance_owner
}

/// What an API key may do on its site (a key stored without a scope reads).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum KeyScope {
    /// Reads only.
    #[default]
    Read,
    /// Reads and configures.
    Configure,
    /// Reads and records trusted conversions
    /// (`POST /api/sites/{site}/conversions`); configures nothing.
    Write,
}

impl KeyScope {
    /// Whether a key of this scope may do `action`: a key acts at most as an
    /// admin.
    pub fn allows(self, action: Action) -> bool {
        let role = match self {
            Self::Read | Self::Write => Role::Viewer,
            Self::Configure => Role::Admin,
        };
        role.allows(action)
    }

    /// Whether a key of this scope may record trusted conversions: only a
    /// `write` key (a server's secret; a key that reads a dashboard never
    /// writes money).
    pub fn records_conversions(self) -> bool {
        self == Self::Write
    }

    /// The scope a key acts with now, given its maker's current role on
    /// the site (`None`: removed, or the maker's account is gone): a key
    /// never does more than the person who made it may do today. A
    /// viewer's keys read; a removed maker's keys do nothing (`None`).
    /// Keys made without a maker (the CLI's, an operator's) keep theirs.
    pub fn capped_by(self, maker: Option<Role>) -> Option<KeyScope> {
        match maker? {
            Role::Viewer => Some(Self::Read),
            Role::Admin | Role::Owner => Some(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_does_no_more_than_its_maker_may_today() {
        use KeyScope::*;
        for scope in [Read, Configure, Write] {
            assert_eq!(scope.capped_by(None), None, "{scope:?}, maker removed");
            assert_eq!(scope.capped_by(Some(Role::Viewer)), Some(Read), "{scope:?}");
            assert_eq!(scope.capped_by(Some(Role::Admin)), Some(scope));
            assert_eq!(scope.capped_by(Some(Role::Owner)), Some(scope));
        }
    }

    /// The matrix of the design, row by row.
    #[test]
    fn the_permission_matrix() {
        let table = [
            (Action::Read, [true, true, true]),
            (Action::Configure, [false, true, true]),
            (Action::ManageMembers, [false, false, true]),
            (Action::ReadAudit, [false, false, true]),
            (Action::DeleteSite, [false, false, true]),
        ];
        assert_eq!(table.len(), Action::ALL.len());
        for (action, row) in table {
            for (role, allowed) in Role::ALL.into_iter().zip(row) {
                assert_eq!(role.allows(action), allowed, "{role:?} {action:?}");
            }
        }
    }

    /// A stronger role may do everything a weaker one may.
    #[test]
    fn roles_are_monotone() {
        for action in Action::ALL {
            for pair in Role::ALL.windows(2) {
                assert!(!pair[0].allows(action) || pair[1].allows(action));
            }
        }
    }

    #[test]
    fn instance_owners_own_every_site() {
        assert_eq!(site_role(true, None), Some(Role::Owner));
        assert_eq!(site_role(true, Some(Role::Viewer)), Some(Role::Owner));
        assert_eq!(site_role(false, Some(Role::Admin)), Some(Role::Admin));
        assert_eq!(site_role(false, None), None);
        for action in [
            InstanceAction::CreateSite,
            InstanceAction::ChangeSettings,
            InstanceAction::ResetPasswords,
        ] {
            assert!(instance_allows(true, action));
            assert!(!instance_allows(false, action));
        }
    }

    #[test]
    fn keys_act_at_most_as_admins() {
        for action in Action::ALL {
            assert_eq!(KeyScope::Read.allows(action), action == Action::Read);
            assert_eq!(
                KeyScope::Configure.allows(action),
                matches!(action, Action::Read | Action::Configure)
            );
        }
        assert_eq!(KeyScope::default(), KeyScope::Read);
        for action in Action::ALL {
            assert_eq!(KeyScope::Write.allows(action), action == Action::Read);
        }
        let writers: Vec<KeyScope> = [KeyScope::Read, KeyScope::Configure, KeyScope::Write]
            .into_iter()
            .filter(|s| s.records_conversions())
            .collect();
        assert_eq!(writers, [KeyScope::Write]);
        let write: KeyScope = serde_json::from_str("\"write\"").expect("scope");
        assert_eq!(write, KeyScope::Write);
        let parsed: KeyScope = serde_json::from_str("\"configure\"").expect("scope");
        assert_eq!(parsed, KeyScope::Configure);
    }

    #[test]
    fn roles_round_trip() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
            let json = serde_json::to_string(&role).expect("role");
            assert_eq!(json, format!("\"{}\"", role.as_str()));
        }
        assert_eq!(Role::parse("Owner"), None);
    }
}
