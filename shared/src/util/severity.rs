//! How loud an alert or a dead job is: what the alert rules, budgets and escalation share.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    /// PagerDuty's severity names (Slack shows them too).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }

    /// The severity [`Severity::as_str`] names (as the alerts table stores it).
    pub fn parse(name: &str) -> Option<Severity> {
        [Severity::Info, Severity::Warning, Severity::Critical]
            .into_iter()
            .find(|s| s.as_str() == name)
    }
}
