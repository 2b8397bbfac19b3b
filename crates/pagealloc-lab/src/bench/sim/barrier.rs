//! A barrier for simulated CPUs: the bench's threads start each timed phase together, as
//! `std::sync::Barrier` releases the real bench's threads.
//!
//! A simulated CPU cannot block inside a step, so a waiter polls: each step it checks the
//! barrier and, still held, sleeps, first `FIRST_POLL_NS` of simulated time, then twice as
//! long each time up to `LAST_POLL_NS`, so that a long wait costs few steps. The last to
//! arrive releases the others at its own clock; a waiter still before that time sleeps until
//! it, and one past it starts at its own clock, late by less than its last sleep. Phases
//! whose CPUs arrive close together (every timed phase) start within a few polls.

use std::sync::{Arc, Mutex};

use crate::workload::Env;

/// Simulated time between a waiting CPU's first checks, and at most.
const FIRST_POLL_NS: u64 = 100;
const LAST_POLL_NS: u64 = 25_600;

#[derive(Debug)]
struct State {
    parties: usize,
    arrived: usize,
    /// Releases so far; a waiter holds the generation it arrived in.
    generation: u64,
    release_ns: u64,
}

/// What a call to [`SimBarrier::wait`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arrival {
    /// Still held: call again next step.
    Waiting,
    /// This CPU arrived last and released the others, in this step: work done before its
    /// next `wait` is seen by every CPU after the release (the simulator runs one step at a
    /// time).
    Last,
    /// Released by another CPU.
    Released,
}

#[derive(Clone, Debug)]
pub(super) struct SimBarrier {
    state: Arc<Mutex<State>>,
}

/// One CPU's place at the barrier while it waits: the generation it waits in, and its next
/// sleep.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Ticket(Option<(u64, u64)>);

impl SimBarrier {
    pub(super) fn new(parties: usize) -> SimBarrier {
        assert!(parties > 0, "a barrier needs a party");
        SimBarrier { state: Arc::new(Mutex::new(State { parties, arrived: 0, generation: 0, release_ns: 0 })) }
    }

    /// Arrives (the first call) or checks again (later calls, with the same ticket).
    pub(super) fn wait(&self, ticket: &mut Ticket, env: &mut dyn Env) -> Arrival {
        let mut state = self.state.lock().expect("barrier unpoisoned");
        match ticket.0 {
            None => {
                state.arrived += 1;
                assert!(state.arrived <= state.parties, "more arrivals than parties");
                if state.arrived == state.parties {
                    state.arrived = 0;
                    state.generation += 1;
                    state.release_ns = env.now_ns();
                    return Arrival::Last;
                }
                ticket.0 = Some((state.generation, FIRST_POLL_NS));
            }
            Some((generation, _)) if state.generation > generation => {
                ticket.0 = None;
                let release_ns = state.release_ns;
                drop(state);
                env.sleep_until(release_ns);
                return Arrival::Released;
            }
            Some(_) => {}
        }
        drop(state);
        let (generation, poll_ns) = ticket.0.expect("a waiter holds its generation");
        ticket.0 = Some((generation, (poll_ns * 2).min(LAST_POLL_NS)));
        let now_ns = env.now_ns();
        env.sleep_until(now_ns + poll_ns);
        Arrival::Waiting
    }
}
