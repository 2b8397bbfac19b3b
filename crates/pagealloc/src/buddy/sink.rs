//! The allocator's event subscriber as the buddy layer holds it: an optional shared
//! [`EventSink`](crate::events::EventSink), published to only when set.

/// An optional shared [`EventSink`](crate::events::EventSink).
#[derive(Clone, Default)]
pub(crate) struct SinkSlot(pub Option<crate::client::Client<dyn crate::events::EventSink>>);

impl core::fmt::Debug for SinkSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.0.is_some() { "SinkSlot(Some)" } else { "SinkSlot(None)" })
    }
}

impl SinkSlot {
    /// Publishes `event` if a subscriber is set; without one, a load and a predicted branch.
    #[inline(always)]
    pub(crate) fn page(&self, event: impl FnOnce() -> crate::events::PageEvent) {
        if self.0.is_some() {
            self.publish(event());
        }
    }

    /// Publishes a fallback if a subscriber is set.
    #[inline(always)]
    pub(crate) fn extfrag(&self, event: &crate::events::ExtfragEvent) {
        if let Some(sink) = &self.0 {
            sink.extfrag(event);
        }
    }

    #[cold]
    #[inline(never)]
    fn publish(&self, event: crate::events::PageEvent) {
        if let Some(sink) = &self.0 {
            sink.page(&event);
        }
    }
}
