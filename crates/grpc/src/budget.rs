//! What the gRPC endpoint's calls may hold: bytes per connection and in
//! all, calls at once of a connection that has not authenticated. Every
//! charge is a guard that gives its bytes back when dropped, so a closed
//! connection (hyper drops its streams) returns everything it held.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::limits::GrpcLimits;

/// The endpoint's budget, shared by its connections.
#[derive(Debug)]
pub struct Budget {
    pub limits: GrpcLimits,
    /// With ACL on, a connection is held to the unauthenticated budget
    /// until one of its calls shows valid credentials.
    pub acl_on: bool,
    held: AtomicUsize,
}

/// One connection's share.
#[derive(Debug, Default)]
pub struct Conn {
    authenticated: AtomicBool,
    calls: AtomicUsize,
    held: AtomicUsize,
}

/// Why a charge was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl Refused {
    pub fn status(&self) -> tonic::Status {
        tonic::Status::resource_exhausted(self.0.clone())
    }
}

impl Budget {
    pub fn new(limits: GrpcLimits, acl_on: bool) -> Arc<Budget> {
        Arc::new(Budget {
            limits,
            acl_on,
            held: AtomicUsize::new(0),
        })
    }

    /// Bytes held by all calls now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Whether `conn` is held to the unauthenticated budget.
    pub fn restricted(&self, conn: &Conn) -> bool {
        self.acl_on && !conn.authenticated.load(Ordering::Acquire)
    }

    fn connection_bytes_max(&self, conn: &Conn) -> usize {
        match self.restricted(conn) {
            true => self
                .limits
                .unauthenticated_call_bytes_max
                .min(self.limits.connection_call_bytes_max),
            false => self.limits.connection_call_bytes_max,
        }
    }

    /// Takes `bytes` for a call of `conn`, or says which bound it passes.
    pub fn charge(self: &Arc<Self>, conn: &Arc<Conn>, bytes: usize) -> Result<Charge, Refused> {
        let before = conn.held.fetch_add(bytes, Ordering::AcqRel);
        let conn_max = self.connection_bytes_max(conn);
        if before.saturating_add(bytes) > conn_max {
            conn.held.fetch_sub(bytes, Ordering::AcqRel);
            return Err(Refused(format!(
                "this connection's calls would hold more than {conn_max} bytes"
            )));
        }
        let before = self.held.fetch_add(bytes, Ordering::AcqRel);
        if before.saturating_add(bytes) > self.limits.call_bytes_max {
            self.held.fetch_sub(bytes, Ordering::AcqRel);
            conn.held.fetch_sub(bytes, Ordering::AcqRel);
            return Err(Refused(format!(
                "the endpoint's calls would hold more than {} bytes",
                self.limits.call_bytes_max
            )));
        }
        Ok(Charge {
            budget: Arc::clone(self),
            conn: Arc::clone(conn),
            bytes,
        })
    }

    /// Counts a call of `conn` in flight; refused past the unauthenticated
    /// budget's calls while `conn` is restricted.
    pub fn begin_call(self: &Arc<Self>, conn: &Arc<Conn>) -> Result<CallSlot, Refused> {
        let before = conn.calls.fetch_add(1, Ordering::AcqRel);
        let slot = CallSlot {
            conn: Arc::clone(conn),
        };
        let max = self.limits.unauthenticated_streams_max;
        if self.restricted(conn) && before >= max {
            return Err(Refused(format!(
                "at most {max} calls at once before a call with valid credentials"
            )));
        }
        Ok(slot)
    }
}

impl Conn {
    /// Marks the connection as having made an authenticated call.
    pub fn authenticated(&self) {
        self.authenticated.store(true, Ordering::Release);
    }

    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// Bytes its calls hold now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// Bytes a call holds, given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    conn: Arc<Conn>,
    bytes: usize,
}

impl Charge {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Grows the charge to `bytes` (never shrinks it).
    pub fn grow_to(&mut self, bytes: usize) -> Result<(), Refused> {
        if bytes <= self.bytes {
            return Ok(());
        }
        let more = self.budget.charge(&self.conn, bytes - self.bytes)?;
        self.bytes += more.bytes;
        std::mem::forget(more);
        Ok(())
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.conn.held.fetch_sub(self.bytes, Ordering::AcqRel);
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// A call in flight, counted until dropped.
#[derive(Debug)]
pub struct CallSlot {
    conn: Arc<Conn>,
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        self.conn.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> GrpcLimits {
        GrpcLimits {
            connection_call_bytes_max: 100,
            call_bytes_max: 150,
            unauthenticated_streams_max: 2,
            unauthenticated_call_bytes_max: 10,
            ..GrpcLimits::default()
        }
    }

    #[test]
    fn charges_are_bounded_per_connection_and_in_all_and_given_back() {
        let budget = Budget::new(limits(), false);
        let (a, b) = (Arc::new(Conn::default()), Arc::new(Conn::default()));
        let first = budget.charge(&a, 100).expect("fits the connection");
        assert!(budget.charge(&a, 1).is_err(), "past the connection's bytes");
        let mut second = budget.charge(&b, 40).expect("fits in all");
        assert!(second.grow_to(60).is_err(), "past the endpoint's bytes");
        assert_eq!((a.held(), b.held(), budget.held()), (100, 40, 140));
        drop(first);
        second.grow_to(60).expect("room again");
        drop(second);
        assert_eq!((a.held(), b.held(), budget.held()), (0, 0, 0));
    }

    #[test]
    fn an_unauthenticated_connection_has_the_small_budget() {
        let budget = Budget::new(limits(), true);
        let conn = Arc::new(Conn::default());
        assert!(budget.charge(&conn, 11).is_err());
        let slots = [budget.begin_call(&conn), budget.begin_call(&conn)];
        assert!(slots.iter().all(Result::is_ok));
        assert!(budget.begin_call(&conn).is_err(), "a third call at once");
        conn.authenticated();
        assert!(budget.begin_call(&conn).is_ok());
        assert!(budget.charge(&conn, 50).is_ok());
        drop(slots);
        assert_eq!(conn.calls.load(Ordering::Acquire), 0);
    }
}
