//! The closed sets of names the job document and the API read and write (`overlap`, `state`,
//! `dialect`, …), in one place: each type's every value and its name on the wire. The HTTP API
//! builds its OpenAPI enums from these lists (`sundial-api`'s `schema`), so a value added here
//! is documented without a second list to keep in step.
//!
//! Each list is checked by the compiler against its enum: a variant added to the enum and not
//! to its list here is a compile error (the exhaustive `match` each use of the `vocabulary!` macro writes).

use crate::change::RunPlace;
use crate::execution::ExecutionState;
use crate::job::{
    BackfillMode, CatchupPolicy, HttpMethod, JobStatus, OverlapPolicy, ParentClosePolicy,
};
use crate::simulate::RowKind;
use crate::spec::{Dialect, DstGap, DstOverlap};

/// A closed set of names: every value of the type and each one's name on the wire.
pub trait Vocabulary: Copy + 'static {
    /// Every value, in the order the documentation lists them.
    const ALL: &'static [Self];

    /// The value's name as the API reads and writes it.
    fn wire_name(self) -> &'static str;

    /// Every name, in the order of [`Vocabulary::ALL`].
    fn wire_names() -> Vec<&'static str> {
        Self::ALL.iter().map(|value| value.wire_name()).collect()
    }
}

/// Implements [`Vocabulary`] for an enum from its variants and the method that names a value,
/// with a `match` that stops the build when the enum gains a variant the list lacks.
macro_rules! vocabulary {
    ($ty:ident, $name:ident, [$($variant:ident),+ $(,)?]) => {
        impl Vocabulary for $ty {
            const ALL: &'static [Self] = &[$($ty::$variant),+];

            fn wire_name(self) -> &'static str {
                self.$name()
            }
        }

        const _: fn($ty) = |value| match value {
            $($ty::$variant)|+ => (),
        };
    };
}

vocabulary!(
    OverlapPolicy,
    name,
    [
        Skip,
        BufferOne,
        BufferAll,
        CancelOther,
        TerminateOther,
        AllowAll
    ]
);
vocabulary!(
    ExecutionState,
    name,
    [Scheduled, Enqueued, Processing, Succeeded, Failed, Terminated, Cancelled, Skipped]
);
vocabulary!(
    HttpMethod,
    as_str,
    [Get, Head, Post, Put, Patch, Delete, Options]
);
vocabulary!(Dialect, name, [Standard, Temporal, Quartz, EventBridge]);
vocabulary!(DstGap, name, [Skip, Shift, Transition, Auto]);
vocabulary!(DstOverlap, name, [Both, First, Second, Auto]);
vocabulary!(CatchupPolicy, name, [Skip, Latest, All]);
vocabulary!(ParentClosePolicy, name, [Abandon, Cancel, Terminate]);
vocabulary!(BackfillMode, name, [All, Missing, Failed]);
vocabulary!(RunPlace, name, [Planned, Waiting, Buffered]);
vocabulary!(JobStatus, name, [Active, Paused]);
vocabulary!(
    RowKind,
    name,
    [Attempt, Skipped, Buffered, Dropped, Missed, Cancelled, Terminated, NotStarted, Paused]
);

#[cfg(test)]
mod tests {
    use super::*;

    fn distinct<V: Vocabulary>() -> bool {
        let names = V::wire_names();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.len() == names.len() && !names.is_empty()
    }

    #[test]
    fn every_vocabulary_names_each_value_once() {
        assert!(distinct::<OverlapPolicy>());
        assert!(distinct::<ExecutionState>());
        assert!(distinct::<HttpMethod>());
        assert!(distinct::<Dialect>());
        assert!(distinct::<DstGap>());
        assert!(distinct::<DstOverlap>());
        assert!(distinct::<CatchupPolicy>());
        assert!(distinct::<ParentClosePolicy>());
        assert!(distinct::<BackfillMode>());
        assert!(distinct::<RunPlace>());
        assert!(distinct::<JobStatus>());
    }

    #[test]
    fn the_lists_agree_with_the_types_own() {
        assert_eq!(
            OverlapPolicy::ALL.as_slice(),
            <OverlapPolicy as Vocabulary>::ALL
        );
        assert_eq!(
            ExecutionState::ALL.as_slice(),
            <ExecutionState as Vocabulary>::ALL
        );
        assert_eq!(
            CatchupPolicy::ALL.as_slice(),
            <CatchupPolicy as Vocabulary>::ALL
        );
        assert_eq!(
            ParentClosePolicy::ALL.as_slice(),
            <ParentClosePolicy as Vocabulary>::ALL
        );
        assert_eq!(
            BackfillMode::ALL.as_slice(),
            <BackfillMode as Vocabulary>::ALL
        );
        // An execution's state is written by serde with the same names.
        for state in <ExecutionState as Vocabulary>::ALL {
            assert_eq!(
                serde_json::to_value(state).ok(),
                Some(serde_json::Value::from(state.wire_name()))
            );
        }
    }
}
