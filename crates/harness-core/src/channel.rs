//! A stream fed by a future: how a watched run's events reach its stream.
//!
//! The producing future gets an [`Emitter`]; the returned [`ChannelStream`] polls that future
//! and the channel together, so items arrive as they are sent, with no task spawned and no
//! runtime handle needed. Dropping the stream drops the producer, which cancels the run.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use futures_core::Stream;

/// What the stream and its emitters share: the items not yet taken, and the waker of a
/// stream waiting for an emitter outside its own producer.
///
/// The producer runs inside the stream's own `poll_next`, so the items it emits are taken in
/// that same poll: no wake is needed for them, and none is made while the stream polls. A
/// plain queue under a lock costs a push and a pop per item, where a channel would
/// wake and re-register a task for each; the queue holds what is in flight (an item or two),
/// not a channel's fixed blocks.
#[derive(Debug)]
struct Shared<T> {
    queue: VecDeque<T>,
    /// The stream's task, for an emitter kept by another task to wake.
    waker: Option<Waker>,
    /// The stream is polling its producer, and takes what is emitted before it returns.
    polling: bool,
    /// The stream was dropped: nothing sent any more is kept.
    closed: bool,
}

/// The sending half handed to a [`channel_stream`] producer.
#[derive(Debug)]
pub(crate) struct Emitter<T> {
    shared: Arc<Mutex<Shared<T>>>,
}

impl<T> Clone for Emitter<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Emitter<T> {
    /// The channel's identity, as [`PRODUCING`] holds it.
    fn address(&self) -> usize {
        Arc::as_ptr(&self.shared).addr()
    }

    /// Sends `item` to the stream. A stream that was dropped stopped listening; the producer
    /// is dropped with it, so nothing is lost that anyone would read.
    pub(crate) fn emit(&self, item: T) {
        let mut shared = Shared::lock(&self.shared);
        if shared.closed {
            return;
        }
        shared.queue.push_back(item);
        if !shared.polling
            && let Some(waker) = &shared.waker
        {
            waker.wake_by_ref();
        }
    }

    /// Lets the stream hand out what was sent so far before the producer goes on: a watcher
    /// then sees, say, a `ToolStarted` before the tool (or a terminal prompt about it) runs.
    ///
    /// Called by the producer, it pauses the producer once and the stream hands its items
    /// out before polling it again: no wake and no trip through the runtime's scheduler
    /// (a `yield_now` costs a poll of the I/O driver). Called anywhere else, it yields to
    /// the runtime.
    pub(crate) async fn deliver(&self) {
        let channel = self.address();
        let mut paused = false;
        std::future::poll_fn(|cx| {
            if paused {
                return Poll::Ready(());
            }
            paused = true;
            let asked = PRODUCING.with(|producing| {
                let current = producing.get();
                let ours = current.channel == channel;
                if ours {
                    producing.set(Producing {
                        delivering: true,
                        ..current
                    });
                }
                ours
            });
            if !asked {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        })
        .await;
    }
}

/// Which channel's producer this thread is polling, and whether that producer asked (by
/// [`Emitter::deliver`]) for its items to be handed out before it is polled again. Set by
/// [`ChannelStream::poll_next`] around the producer's poll, the outer value kept for a
/// stream polled inside another's producer.
#[derive(Debug, Clone, Copy)]
struct Producing {
    channel: usize,
    delivering: bool,
}

thread_local! {
    static PRODUCING: std::cell::Cell<Producing> = const {
        std::cell::Cell::new(Producing {
            channel: 0,
            delivering: false,
        })
    };
}

/// This thread polling a channel's producer, from `enter` until `leave` or a drop: a
/// producer that panics does not leave its channel marked as the one polled.
struct ProducerPoll {
    outer: Producing,
}

impl ProducerPoll {
    fn enter(channel: usize) -> Self {
        let outer = PRODUCING.replace(Producing {
            channel,
            delivering: false,
        });
        Self { outer }
    }

    /// Ends the poll: whether the producer asked to deliver.
    fn leave(self) -> bool {
        let delivering = PRODUCING.get().delivering;
        drop(self);
        delivering
    }
}

impl Drop for ProducerPoll {
    fn drop(&mut self) {
        PRODUCING.set(self.outer);
    }
}

/// A stream of what `produce`'s future emits, in order. It ends once that future has
/// completed and every item it sent has been taken; items sent afterwards by a clone of the
/// [`Emitter`] kept elsewhere are not waited for. (The module is private, so its example is
/// the unit test `what_is_emitted_arrives_in_order` below.)
pub(crate) fn channel_stream<T, F>(produce: impl FnOnce(Emitter<T>) -> F) -> ChannelStream<T, F>
where
    F: Future<Output = ()>,
{
    let shared = Arc::new(Mutex::new(Shared {
        queue: VecDeque::new(),
        waker: None,
        polling: false,
        closed: false,
    }));
    let emitter = Emitter {
        shared: Arc::clone(&shared),
    };
    ChannelStream {
        run: Some(Box::pin(produce(emitter))),
        shared,
        taken: VecDeque::new(),
    }
}

/// The stream [`channel_stream`] returns.
pub(crate) struct ChannelStream<T, F> {
    run: Option<Pin<Box<F>>>,
    shared: Arc<Mutex<Shared<T>>>,
    /// Items already moved out of `shared` in one go, handed out without taking the lock:
    /// a producer that emits a burst in one poll costs two locks, not one per item.
    taken: VecDeque<T>,
}

// Nothing in the stream is ever pinned in place: the producer is pinned in its own box, and
// items are moved in and out of the queues by value.
impl<T, F> Unpin for ChannelStream<T, F> {}

impl<T> Shared<T> {
    fn lock(shared: &Mutex<Self>) -> std::sync::MutexGuard<'_, Self> {
        shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves every item sent so far into `taken` (empty on entry). When none was sent:
    /// `polling` says the stream is about to poll its producer, `waker` is registered to be
    /// woken by the next item, and `waiting` says the producer is about to wait (on a
    /// model, a tool), so both buffers are let go: thousands of waiting runs hold only what
    /// they need.
    fn take_all(
        shared: &Mutex<Self>,
        taken: &mut VecDeque<T>,
        polling: bool,
        waker: Option<&Waker>,
        waiting: bool,
    ) {
        let mut shared = Self::lock(shared);
        std::mem::swap(&mut shared.queue, taken);
        let none = taken.is_empty();
        shared.polling = polling && none;
        if !none {
            return;
        }
        if let Some(waker) = waker {
            match &shared.waker {
                Some(registered) if registered.will_wake(waker) => {}
                _ => shared.waker = Some(waker.clone()),
            }
        }
        if waiting {
            let_go(taken);
            let_go(&mut shared.queue);
        }
    }
}

impl<T, F> ChannelStream<T, F> {
    /// The next item already sent, without polling the producer: for a stream that knows
    /// its producer is waiting on something else (a watched run on the model stream it
    /// handed over) and would only be polled to say so.
    pub(crate) fn take_sent(&mut self) -> Option<T> {
        if self.taken.is_empty() {
            Shared::take_all(&self.shared, &mut self.taken, false, None, false);
        }
        self.taken.pop_front()
    }

    /// How many items the stream's buffers have room for.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.taken.capacity() + Shared::lock(&self.shared).queue.capacity()
    }

    /// Lets the buffers go, all sent having been taken, when the producer is known to wait
    /// for long without being polled (a watched run on the model stream it handed over).
    pub(crate) fn release(&mut self) {
        let_go(&mut self.taken);
        let_go(&mut Shared::lock(&self.shared).queue);
    }
}

/// Frees an empty queue's buffer: a stream that waits holds only what it needs.
fn let_go<T>(queue: &mut VecDeque<T>) {
    if queue.is_empty() && queue.capacity() > 0 {
        *queue = VecDeque::new();
    }
}

impl<T, F> std::fmt::Debug for ChannelStream<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelStream")
            .field("running", &self.run.is_some())
            .finish_non_exhaustive()
    }
}

impl<T, F: Future<Output = ()>> Stream for ChannelStream<T, F> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = &mut *self;
        if let Some(item) = this.taken.pop_front() {
            return Poll::Ready(Some(item));
        }
        loop {
            // What the producer emits while it is polled here is taken below; only an emitter
            // elsewhere needs to wake the stream.
            let running = this.run.is_some();
            Shared::take_all(&this.shared, &mut this.taken, running, None, false);
            if let Some(item) = this.taken.pop_front() {
                return Poll::Ready(Some(item));
            }
            // The producer is done: the queue held all it will ever get.
            let Some(run) = &mut this.run else {
                return Poll::Ready(None);
            };
            let producing = ProducerPoll::enter(Arc::as_ptr(&this.shared).addr());
            let polled = run.as_mut().poll(cx);
            let delivering = producing.leave();
            if polled.is_ready() {
                this.run = None;
                continue;
            }
            Shared::take_all(&this.shared, &mut this.taken, false, Some(cx.waker()), true);
            if let Some(item) = this.taken.pop_front() {
                return Poll::Ready(Some(item));
            }
            // A producer that paused to deliver with nothing to hand out goes on at once:
            // nothing else would wake it.
            if !delivering {
                return Poll::Pending;
            }
        }
    }
}

impl<T, F> Drop for ChannelStream<T, F> {
    fn drop(&mut self) {
        // Emitters kept elsewhere must not fill a queue nobody reads.
        let mut shared = Shared::lock(&self.shared);
        shared.closed = true;
        shared.queue.clear();
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt as _;

    use super::*;

    #[tokio::test]
    async fn what_is_emitted_arrives_in_order() {
        let numbers = channel_stream(|tx| async move {
            for n in 1..=3 {
                tx.emit(n);
                tx.deliver().await;
            }
        });
        assert_eq!(numbers.collect::<Vec<_>>().await, [1, 2, 3]);
    }

    #[tokio::test]
    async fn items_arrive_while_the_producer_still_runs() {
        let (gate, open) = tokio::sync::oneshot::channel::<()>();
        let mut stream = channel_stream(|tx| async move {
            tx.emit("first");
            // Waits for the consumer to have read "first".
            let _ = open.await;
            tx.emit("second");
        });
        assert_eq!(stream.next().await, Some("first"));
        gate.send(()).unwrap();
        assert_eq!(stream.next().await, Some("second"));
        assert_eq!(stream.next().await, None);
    }

    /// 10,000 items sent in one burst by a producer that finishes at once: every one arrives,
    /// past tokio's cooperative budget (128 polls), on both runtimes.
    #[test]
    fn a_burst_far_past_the_cooperative_budget_arrives_whole() {
        for runtime in [
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .unwrap(),
        ] {
            let got: Vec<u32> = runtime.block_on(async {
                channel_stream(|tx| async move {
                    for n in 0..10_000 {
                        tx.emit(n);
                    }
                })
                .collect()
                .await
            });
            assert_eq!(got, (0..10_000).collect::<Vec<_>>());
        }
    }

    #[tokio::test]
    async fn an_emitter_on_another_task_wakes_the_pending_stream() {
        let mut stream = channel_stream(|tx| async move {
            let elsewhere = tx.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                elsewhere.emit(1);
            });
            // The producer itself never wakes the stream again.
            std::future::pending::<()>().await;
        });
        let next = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next());
        assert_eq!(next.await.ok(), Some(Some(1)));
    }

    /// A waker that counts its wakes.
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn deliver_hands_out_what_was_sent_before_the_producer_goes_on_without_a_wake() {
        let went_on = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&went_on);
        let mut stream = channel_stream(|tx| async move {
            tx.emit(1);
            tx.emit(2);
            tx.deliver().await;
            log.lock().unwrap().push("after the first");
            // Nothing sent: the producer goes on at once.
            tx.deliver().await;
            tx.emit(3);
            tx.deliver().await;
            log.lock().unwrap().push("after the second");
        });
        let counter = Arc::new(Wakes(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counter));
        let mut cx = Context::from_waker(&waker);
        let mut next = || Pin::new(&mut stream).poll_next(&mut cx);
        assert_eq!(next(), Poll::Ready(Some(1)));
        assert!(
            went_on.lock().unwrap().is_empty(),
            "the producer went on first"
        );
        assert_eq!(next(), Poll::Ready(Some(2)));
        assert!(went_on.lock().unwrap().is_empty());
        assert_eq!(next(), Poll::Ready(Some(3)));
        assert_eq!(*went_on.lock().unwrap(), ["after the first"]);
        assert_eq!(next(), Poll::Ready(None));
        assert_eq!(
            *went_on.lock().unwrap(),
            ["after the first", "after the second"]
        );
        assert_eq!(counter.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[test]
    fn a_producer_that_panics_leaves_no_channel_marked_as_polled() {
        let mut stream = channel_stream(|tx: Emitter<u8>| async move {
            tx.deliver().await;
            panic!("the producer broke");
        });
        let mut cx = Context::from_waker(Waker::noop());
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Pin::new(&mut stream).poll_next(&mut cx)
        }));
        assert!(polled.is_err());
        let left = PRODUCING.get();
        assert_eq!((left.channel, left.delivering), (0, false));
    }

    #[tokio::test]
    async fn deliver_called_off_the_producer_yields_and_goes_on() {
        // An emitter kept by another task: its `deliver` is a plain yield there.
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        let mut stream = channel_stream(|tx| async move {
            let elsewhere = tx.clone();
            tokio::spawn(async move {
                elsewhere.emit(1);
                elsewhere.deliver().await;
                elsewhere.emit(2);
                let _ = done.send(());
            });
            std::future::pending::<()>().await;
        });
        let first_two = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            (stream.next().await, stream.next().await)
        });
        assert_eq!(first_two.await.ok(), Some((Some(1), Some(2))));
        assert!(finished.await.is_ok());
    }

    #[tokio::test]
    async fn a_producer_that_sends_nothing_ends_the_stream() {
        let stream = channel_stream(|_tx: Emitter<u8>| async {});
        assert_eq!(stream.collect::<Vec<_>>().await, Vec::<u8>::new());
    }

    #[tokio::test]
    async fn dropping_the_stream_cancels_the_producer() {
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        let mut stream = channel_stream(|tx| async move {
            tx.emit(1);
            std::future::pending::<()>().await;
            let _ = done.send(());
        });
        assert_eq!(stream.next().await, Some(1));
        drop(stream);
        // The producer was dropped mid-run: its oneshot sender went with it, unsent.
        assert!(finished.await.is_err());
    }
}
