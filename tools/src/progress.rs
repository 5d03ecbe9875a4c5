//! The tools' progress bar (indicatif) on stderr: shown only when stderr is a terminal and
//! the work has run for more than [`SHOW_AFTER`], so that a short run, a redirected one and a
//! test's captured output get no bar and no escape codes.

use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes without a bar.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Whether a bar is drawn: on a terminal, after [`SHOW_AFTER`].
pub fn shows_bar(terminal: bool, elapsed: Duration) -> bool {
    terminal && elapsed > SHOW_AFTER
}

/// A progress bar on stderr that appears once [`shows_bar`] holds, counting `unit` (e.g.
/// `"work-groups"`) done of a total. Cleared when finished or dropped.
#[derive(Debug)]
pub struct ProgressDisplay {
    started: Instant,
    terminal: bool,
    unit: &'static str,
    bar: Option<ProgressBar>,
}

impl ProgressDisplay {
    /// A display on this process's stderr, started now.
    pub fn stderr(unit: &'static str) -> ProgressDisplay {
        ProgressDisplay {
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            unit,
            bar: None,
        }
    }

    /// Whether a bar has been drawn so far.
    pub fn is_shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Shows `done` of `total` (creating the bar once [`shows_bar`] holds).
    pub fn update(&mut self, done: u64, total: u64) {
        if self.bar.is_none() {
            if !shows_bar(self.terminal, self.started.elapsed()) {
                return;
            }
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                .with_elapsed(self.started.elapsed());
            if let Ok(style) = ProgressStyle::with_template(&format!(
                "{{elapsed:>4}} [{{wide_bar}}] {{pos}}/{{len}} {} ({{eta}} left)",
                self.unit
            )) {
                bar.set_style(style);
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    /// Removes the bar, if one was drawn.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for ProgressDisplay {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bar only on a terminal, and only after a second.
    #[test]
    fn bar_only_on_a_terminal_after_a_second() {
        assert!(!shows_bar(false, Duration::from_secs(5)));
        assert!(!shows_bar(true, Duration::from_millis(999)));
        assert!(!shows_bar(true, SHOW_AFTER));
        assert!(shows_bar(true, Duration::from_millis(1001)));
    }

    /// Not a terminal (a test's stderr is captured): updates after the delay draw nothing.
    #[test]
    fn no_bar_when_stderr_is_not_a_terminal() {
        let mut d = ProgressDisplay {
            started: Instant::now() - Duration::from_secs(2),
            terminal: false,
            unit: "work-groups",
            bar: None,
        };
        d.update(1, 2);
        assert!(!d.is_shown());
        d.terminal = true;
        d.update(1, 2);
        assert!(d.is_shown());
        d.finish();
        assert!(!d.is_shown());
    }
}
