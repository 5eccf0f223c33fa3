//! The worker threads that perform effects: each takes one job at a time from a shared
//! queue, performs it (blocking), and sends the result to the executor's inbox.

use crossbeam_channel::{Receiver, Sender};

use crate::effects::{
    CodeOutcome, CodeRun, EffectError, Effects, ModelAnswer, ModelCall, ToolAnswer, ToolCall,
};

/// One effect to perform.
#[derive(Debug)]
pub(crate) enum Request {
    Tool(ToolCall),
    Model(ModelCall),
    Code(CodeRun),
}

/// What an effect gave.
#[derive(Debug)]
pub(crate) enum Response {
    Tool(Result<ToolAnswer, EffectError>),
    Model(Result<ModelAnswer, EffectError>),
    Code(Result<CodeOutcome, EffectError>),
}

/// What reaches the executor while it waits.
pub(crate) enum Inbox {
    /// Job `id` is done.
    Done(u64, Response),
    /// The log is durable up to this ticket.
    Durable(u64),
    /// The log cannot be written.
    LogFailed(String),
}

/// Performs `request`.
pub(crate) fn perform(effects: &dyn Effects, request: &Request) -> Response {
    match request {
        Request::Tool(call) => Response::Tool(effects.tool(call)),
        Request::Model(call) => Response::Model(effects.model(call)),
        Request::Code(run) => Response::Code(effects.code(run)),
    }
}

/// A worker: performs jobs until the queue closes.
pub(crate) fn work(effects: &dyn Effects, jobs: &Receiver<(u64, Request)>, inbox: &Sender<Inbox>) {
    while let Ok((id, request)) = jobs.recv() {
        let response = perform(effects, &request);
        if inbox.send(Inbox::Done(id, response)).is_err() {
            break;
        }
    }
}
