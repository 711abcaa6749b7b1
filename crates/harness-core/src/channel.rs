//! A stream fed by a future: the way every progress stream of the workspace is built (the
//! agent's events, a graph's updates, a research run's events).
//!
//! The producing future gets an [`Emitter`]; the returned [`ChannelStream`] polls that future
//! and the channel together, so items arrive as they are sent, with no task spawned and no
//! runtime handle needed. Dropping the stream drops the producer, which cancels the run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The sending half handed to a [`channel_stream`] producer.
#[derive(Debug)]
pub struct Emitter<T> {
    sender: UnboundedSender<T>,
}

impl<T> Clone for Emitter<T> {
    fn clone(&self) -> Self {
        Self {
            sender: self.sender.clone(),
        }
    }
}

impl<T> Emitter<T> {
    /// Sends `item` to the stream. A stream that was dropped stopped listening; the producer
    /// is dropped with it, so nothing is lost that anyone would read.
    pub fn emit(&self, item: T) {
        let _ = self.sender.send(item);
    }

    /// Lets the stream hand out what was sent so far before the producer goes on: a watcher
    /// then sees, say, a `ToolStarted` before the tool (or a terminal prompt about it) runs.
    pub async fn deliver(&self) {
        tokio::task::yield_now().await;
    }
}

/// A stream of what `produce`'s future emits, in order. It ends once that future has
/// completed and every item it sent has been taken; items sent afterwards by a clone of the
/// [`Emitter`] kept elsewhere are not waited for.
///
/// ```
/// use futures_util::StreamExt as _;
/// use harness_core::channel::channel_stream;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let numbers = channel_stream(|tx| async move {
///     for n in 1..=3 {
///         tx.emit(n);
///         tx.deliver().await;
///     }
/// });
/// assert_eq!(numbers.collect::<Vec<_>>().await, [1, 2, 3]);
/// # });
/// ```
pub fn channel_stream<T, F>(produce: impl FnOnce(Emitter<T>) -> F) -> ChannelStream<T, F>
where
    F: Future<Output = ()>,
{
    let (sender, receiver) = unbounded_channel();
    ChannelStream {
        run: Some(Box::pin(produce(Emitter { sender }))),
        receiver,
    }
}

/// The stream [`channel_stream`] returns.
pub struct ChannelStream<T, F> {
    run: Option<Pin<Box<F>>>,
    receiver: UnboundedReceiver<T>,
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
        if let Some(run) = &mut this.run {
            // `poll_recv` may answer `Pending` with items still queued when the task's
            // cooperative budget is spent; it then wakes the task, so `Pending` is right here.
            if let Poll::Ready(Some(item)) = this.receiver.poll_recv(cx) {
                return Poll::Ready(Some(item));
            }
            if run.as_mut().poll(cx).is_pending() {
                return match this.receiver.poll_recv(cx) {
                    Poll::Ready(Some(item)) => Poll::Ready(Some(item)),
                    _ => Poll::Pending,
                };
            }
            this.run = None;
        }
        // The producer is done, so the queue holds all it will ever get: drain it with
        // `try_recv`, which the cooperative budget does not cut short. Reading a budget
        // `Pending` as "empty" here is what once ended streams early.
        Poll::Ready(this.receiver.try_recv().ok())
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt as _;

    use super::*;

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
