//! How the allocator holds its clients (the event sink, reclaim and migration callbacks):
//! shared through an `Arc` with the `alloc` feature, or a `&'static` reference, which a
//! kernel without a heap gives for a client that lives as long as the allocator.

use core::fmt;
use core::ops::Deref;

/// A client the allocator calls, held for its lifetime.
pub enum Client<T: ?Sized + 'static> {
    Static(&'static T),
    #[cfg(feature = "alloc")]
    Shared(alloc::sync::Arc<T>),
}

impl<T: ?Sized> Deref for Client<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            Client::Static(client) => client,
            #[cfg(feature = "alloc")]
            Client::Shared(client) => client,
        }
    }
}

impl<T: ?Sized> Clone for Client<T> {
    fn clone(&self) -> Self {
        match self {
            Client::Static(client) => Client::Static(client),
            #[cfg(feature = "alloc")]
            Client::Shared(client) => Client::Shared(client.clone()),
        }
    }
}

impl<T: ?Sized> fmt::Debug for Client<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Client::Static(_) => f.write_str("Client::Static"),
            #[cfg(feature = "alloc")]
            Client::Shared(_) => f.write_str("Client::Shared"),
        }
    }
}
