//! The clock handed to handlers: the system clock in production, a fixed or
//! settable one in tests.

use std::sync::atomic::{AtomicI64, Ordering};
use tally_core::Millis;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Now, ms since the epoch.
    fn now(&self) -> Millis;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
    }
}

/// A clock that reads a settable instant.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock at `at`.
    pub fn at(at: Millis) -> Self {
        Self(AtomicI64::new(at))
    }

    /// Moves the clock to `at`.
    pub fn set(&self, at: Millis) {
        self.0.store(at, Ordering::SeqCst);
    }

    /// Moves the clock forward by `by` ms.
    pub fn advance(&self, by: Millis) {
        self.0.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Millis {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Millis {
        (**self).now()
    }
}
