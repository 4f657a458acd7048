//! The bytes a server thread (a shard) holds for its connections: queued
//! output plus the frames of requests being handled. Each connection has
//! its own limits (its reader pauses at them); this is the sum over all of
//! them. Past `ServerLimits::shard_bytes_max` the server's sweeper is woken
//! at once and closes the connections holding the most queued output whose
//! sockets take none of it (clients that do not read), biggest first, until
//! the thread is under budget again. Pausing every reader instead would let
//! one such client stall all the others.

use std::cell::Cell;
use std::task::Waker;

thread_local! {
    static HELD_BYTES: Cell<usize> = const { Cell::new(0) };
    static BUDGET_BYTES: Cell<usize> = const { Cell::new(usize::MAX) };
    static SWEEPER: Cell<Option<Waker>> = const { Cell::new(None) };
}

/// Sets this thread's budget (the server does, at start).
pub(crate) fn set_budget(bytes: usize) {
    BUDGET_BYTES.with(|b| b.set(bytes));
}

pub(crate) fn add(bytes: usize) {
    let held = HELD_BYTES.with(|held| {
        let now = held.get().saturating_add(bytes);
        held.set(now);
        now
    });
    if held >= BUDGET_BYTES.with(Cell::get) {
        if let Some(sweeper) = SWEEPER.with(Cell::take) {
            sweeper.wake();
        }
    }
}

pub(crate) fn sub(bytes: usize) {
    HELD_BYTES.with(|held| held.set(held.get().saturating_sub(bytes)));
}

/// Whether the thread holds at least its budget.
pub(crate) fn over() -> bool {
    HELD_BYTES.with(Cell::get) >= BUDGET_BYTES.with(Cell::get)
}

/// The sweeper to wake when the budget is crossed.
pub(crate) fn set_sweeper(waker: Waker) {
    SWEEPER.with(|s| s.set(Some(waker)));
}

/// Bytes held now by this thread's connections.
pub fn held_bytes() -> usize {
    HELD_BYTES.with(Cell::get)
}
