//! The job ledger as the gateway keeps it: an index of every job kept current by a watch
//! ([`index`]), the room left in the bounded bucket ([`room`]), the periodic pass that refreshes
//! gauges, quotas and deadlines from it ([`sweep`]), and the work waiting per stage weighted by
//! size ([`backlog`]).

pub(crate) mod backlog;
pub(crate) mod index;
pub(crate) mod room;
pub(crate) mod sweep;
