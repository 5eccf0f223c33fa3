//! The interpreter: walks a compiled version, runs its steps with the semantics of spec §3,
//! and asks the [`Oracle`] what to do with the log.
//!
//! One thread (the caller's) decides everything: which steps start, what their
//! expressions give, what their effects are asked. Values (`Val`, shared through `Rc`)
//! never leave it. Effects are performed by worker threads (at most `max_parallel` at
//! once) and their results come back to the thread's inbox, with the log writer's news of
//! durability. So a run is a deterministic function of its version, its input and its
//! effects' results, whatever order those results arrive in.
//!
//! Steps live in *frames*: the top-level list, an item of a `map`, an iteration of a
//! `loop`, the case a `branch` took. A frame's step starts when the steps it depends on
//! have finished; an effect is sent only once what it was computed from is durable in the
//! log (group commit: the executor never waits for the disk between independent steps).

mod pool;
mod steps;

use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::rc::Rc;

use crossbeam_channel::{Receiver, Sender};
use lwir_spec::Code;
use lwir_spec::expr::eval::{Bindings, Val};
use serde_json::Value;

use crate::Observer;
use crate::effects::Effects;
use crate::log::{Failure, RunEvent, RunFailed, RunSucceeded, StepFailed, StepSkipped, Usage};
use crate::oracle::{Difference, Emitted, Latest, Mode, Oracle};
use crate::program::{Compiled, Program, Step};
use crate::values::{self, Schemas};
use lwir_spec::ir::StepKind;

pub(crate) use pool::{Inbox, Request, Response};
pub use steps::{MAX_MODEL_ROUNDS, MAX_TOOL_CALLS_PER_ROUND, idempotency_key};

/// What the interpreter needs besides the program.
pub(crate) struct Context<'a> {
    /// The run id (idempotency keys are derived from it).
    pub(crate) run: &'a str,
    /// The run input.
    pub(crate) input: Val,
    /// The schemas of the tools the version references.
    pub(crate) tools: &'a BTreeMap<String, lwir_registry::dependencies::ToolSchemas>,
    /// The model each slot is asked for.
    pub(crate) models: &'a BTreeMap<String, String>,
    /// The definition's output schema (`null`: none).
    pub(crate) output_schema: &'a Value,
    /// Leaf steps (effects) running at once, at most.
    pub(crate) max_parallel: usize,
    /// The evaluator's budget per expression.
    pub(crate) budget: u64,
}

/// How a walk ended.
#[derive(Debug)]
pub(crate) enum End {
    /// The run succeeded with this output.
    Succeeded(Value),
    /// A step (or the output) failed the run.
    Failed {
        /// The innermost step that failed (none for the workflow's output).
        step: Option<String>,
        /// Why.
        failure: Failure,
    },
    /// Rebuilding differs from the log.
    Differs(Difference),
    /// Nothing more can happen: a replay reached what the log does not hold (a run that
    /// did not end).
    Stalled,
    /// The log cannot be written.
    LogFailed(String),
}

/// A walk's result.
pub(crate) struct Outcome {
    pub(crate) end: End,
    pub(crate) usage: Usage,
    /// Step attempts that ended (succeeded, failed or skipped) in this walk.
    pub(crate) steps_ended: u64,
}

type FrameId = usize;
type Leaf = (FrameId, usize);

/// Why a frame exists.
#[derive(Clone, Copy, Debug)]
enum FrameKind {
    Root,
    Item(usize),
    Iteration(u32),
    Case,
}

/// The state of one step of a frame.
enum State {
    Waiting,
    /// A leaf step waiting for a slot (and for durability).
    Queued(Attempt),
    Running(Box<Running>),
    Done,
    Failed,
    /// Not started, and will not be (the frame stopped; replay reached what the run never
    /// did).
    NotRun,
}

/// An attempt about to run.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    attempt: u32,
    /// The ticket that must be durable before its effect is sent.
    requirement: u64,
    /// `Some(true)` when the step has a `when` (which held), as `step.started` says.
    when: Option<bool>,
}

/// A step in progress.
struct Running {
    attempt: Attempt,
    kind: Kind,
    /// Whether it holds one of the `max_parallel` slots.
    slot: bool,
}

/// What a step in progress is doing.
enum Kind {
    Tool(steps::ToolRun),
    Model(Box<steps::ModelRun>),
    Code(steps::CodeRunState),
    Map(steps::MapRun),
    /// A branch or loop, waiting for the frame it started (or a reduce, which ends at
    /// once).
    Body,
    /// A leaf waiting for what it does next (or, in replay of a run that did not end, for
    /// an effect the log does not have).
    Idle,
}

struct Frame<'p> {
    owner: Option<(FrameId, usize)>,
    kind: FrameKind,
    steps: &'p [Step],
    prefix: String,
    /// Variables bound here (a map's `as`).
    vars: Vec<(String, Val)>,
    state: Vec<State>,
    waiting_on: Vec<usize>,
    outputs: HashMap<&'p str, Option<Val>>,
    tickets: Vec<u64>,
    unfinished: usize,
    running: usize,
    not_run: usize,
    failure: Option<Failure>,
    /// Set when a failure below will fail this frame: nothing new starts in it.
    doomed: bool,
    base_ticket: u64,
}

/// What the run remembers of a step path.
#[derive(Default)]
struct Memory {
    /// Whether the log was asked about it (resume, retry) already.
    consulted: bool,
    /// The last attempt number used.
    attempt: u32,
    /// Attempts of the current execution.
    tries: u32,
    /// Which attempt of the enclosing step the tries were counted in.
    execution: Option<(String, u32)>,
    /// The outcome of a finished execution, reused when the step is reached again (a retry
    /// of an enclosing step).
    done: Option<Option<Val>>,
}

pub(crate) struct Exec<'p, 'o> {
    program: &'p Program,
    cx: &'p Context<'p>,
    oracle: &'o mut Oracle,
    effects: Option<&'p dyn Effects>,
    observer: &'p dyn Observer,
    frames: Vec<Option<Frame<'p>>>,
    free: Vec<FrameId>,
    memory: HashMap<String, Memory>,
    schemas: Schemas,
    ready: VecDeque<Leaf>,
    to_check: Vec<FrameId>,
    /// Results taken from the log, by the seq they were recorded at: delivered in that
    /// order, each once nothing else can be done, so that a rebuilt run sees its effects
    /// end in the order the recorded one did (which item of a map failed first, which
    /// started after it).
    immediate: BTreeMap<u64, (Leaf, Response)>,
    jobs: HashMap<u64, Leaf>,
    next_job: u64,
    job_tx: Option<Sender<(u64, Request)>>,
    slots: VecDeque<Leaf>,
    held: usize,
    durable: u64,
    durability: BinaryHeap<std::cmp::Reverse<(u64, Leaf)>>,
    stopping: bool,
    end: Option<End>,
    usage: Usage,
    steps_ended: u64,
}

/// Runs `program` to its end in the oracle's mode. Effects run on `max_parallel` worker
/// threads sharing `effects` (none in replay); results and the writer's news arrive on
/// `inbox`.
pub(crate) fn execute(
    program: &Program,
    cx: &Context<'_>,
    oracle: &mut Oracle,
    effects: Option<&dyn Effects>,
    observer: &dyn Observer,
    inbox: (Sender<Inbox>, Receiver<Inbox>),
) -> Outcome {
    let (tx, rx) = inbox;
    std::thread::scope(|scope| {
        let (job_tx, job_rx) = crossbeam_channel::unbounded::<(u64, Request)>();
        let mut workers = Vec::new();
        if let Some(effects) = effects.filter(|_| oracle.performs()) {
            for _ in 0..cx.max_parallel.max(1) {
                let jobs = job_rx.clone();
                let tx = tx.clone();
                workers.push(scope.spawn(move || pool::work(effects, &jobs, &tx)));
            }
        }
        drop(job_rx);
        let mut exec = Exec {
            program,
            cx,
            oracle,
            effects,
            observer,
            frames: Vec::new(),
            free: Vec::new(),
            memory: HashMap::new(),
            schemas: Schemas::default(),
            ready: VecDeque::new(),
            to_check: Vec::new(),
            immediate: BTreeMap::new(),
            jobs: HashMap::new(),
            next_job: 0,
            job_tx: Some(job_tx),
            slots: VecDeque::new(),
            held: 0,
            durable: 0,
            durability: BinaryHeap::new(),
            stopping: false,
            end: None,
            usage: Usage::default(),
            steps_ended: 0,
        };
        let end = exec.run(&rx);
        // Closing the queue ends the workers; jobs still running finish first (their
        // results are not waited for: the run already ended, which only happens with
        // nothing in flight, or after a failure of the log).
        exec.job_tx = None;
        let usage = exec.usage;
        let steps_ended = exec.steps_ended;
        drop(exec);
        drop(tx);
        for w in workers {
            let _ = w.join();
        }
        Outcome {
            end,
            usage,
            steps_ended,
        }
    })
}

impl<'p> Exec<'p, '_> {
    fn run(&mut self, inbox: &Receiver<Inbox>) -> End {
        let steps: &'p [Step] = &self.program.steps;
        self.new_frame(None, FrameKind::Root, steps, String::new(), Vec::new(), 0);
        loop {
            self.pump();
            if let Some(end) = self.end.take() {
                // The run is over once nothing is in flight (a failure waits for what
                // runs to finish and be recorded); a difference or a broken log ends it
                // at once.
                if self.jobs.is_empty() || matches!(end, End::Differs(_) | End::LogFailed(_)) {
                    return end;
                }
                self.end = Some(end);
            } else if self.jobs.is_empty() && self.durability.is_empty() {
                // Nothing this walk waits for can arrive.
                return End::Stalled;
            }
            match inbox.recv() {
                Ok(Inbox::Done(id, response)) => {
                    if let Some(leaf) = self.jobs.remove(&id) {
                        self.on_response(leaf, response);
                    }
                }
                Ok(Inbox::Durable(ticket)) => self.advance_durable(ticket),
                Ok(Inbox::LogFailed(why)) => return End::LogFailed(why),
                Err(_) => return End::Stalled,
            }
        }
    }

    /// Does everything that can be done without waiting.
    fn pump(&mut self) {
        loop {
            if matches!(self.end, Some(End::Differs(_) | End::LogFailed(_))) {
                return;
            }
            if let Some(leaf) = self.ready.pop_front() {
                self.start_step(leaf.0, leaf.1);
                continue;
            }
            if let Some(fid) = self.to_check.pop() {
                self.check_frame(fid);
                continue;
            }
            if self.dispatch() {
                continue;
            }
            // Every call that can be sent now has been: the earliest recorded result is
            // the one the recorded run saw next.
            if let Some((_, (leaf, response))) = self.immediate.pop_first() {
                self.on_response(leaf, response);
                continue;
            }
            return;
        }
    }

    fn advance_durable(&mut self, ticket: u64) {
        self.durable = self.durable.max(ticket);
        while let Some(std::cmp::Reverse((need, leaf))) = self.durability.peek().copied() {
            if need > self.durable {
                break;
            }
            self.durability.pop();
            self.slots.push_back(leaf);
        }
    }

    /// The durable ticket as far as this mode needs one: replay writes nothing.
    fn is_durable(&self, ticket: u64) -> bool {
        ticket == 0 || self.durable >= ticket || self.oracle.mode() == Mode::Replay
    }

    // ----- frames -----

    fn new_frame(
        &mut self,
        owner: Option<(FrameId, usize)>,
        kind: FrameKind,
        steps: &'p [Step],
        prefix: String,
        vars: Vec<(String, Val)>,
        base_ticket: u64,
    ) -> FrameId {
        let frame = Frame {
            owner,
            kind,
            steps,
            prefix,
            vars,
            state: steps.iter().map(|_| State::Waiting).collect(),
            waiting_on: steps.iter().map(|s| s.deps.len()).collect(),
            outputs: HashMap::new(),
            tickets: vec![0; steps.len()],
            unfinished: steps.len(),
            running: 0,
            not_run: 0,
            failure: None,
            doomed: false,
            base_ticket,
        };
        let fid = match self.free.pop() {
            Some(fid) => {
                self.frames[fid] = Some(frame);
                fid
            }
            None => {
                self.frames.push(Some(frame));
                self.frames.len() - 1
            }
        };
        for (i, s) in steps.iter().enumerate() {
            if s.deps.is_empty() {
                self.ready.push_back((fid, i));
            }
        }
        if steps.is_empty() {
            self.to_check.push(fid);
        }
        fid
    }

    fn frame(&self, fid: FrameId) -> &Frame<'p> {
        self.frames[fid].as_ref().expect("a live frame")
    }

    fn frame_mut(&mut self, fid: FrameId) -> &mut Frame<'p> {
        self.frames[fid].as_mut().expect("a live frame")
    }

    fn free_frame(&mut self, fid: FrameId) {
        self.frames[fid] = None;
        self.free.push(fid);
    }

    fn path(&self, fid: FrameId, i: usize) -> String {
        let f = self.frame(fid);
        format!("{}{}", f.prefix, f.steps[i].id)
    }

    /// The step path and attempt of the step that owns frame `fid`, if any.
    fn enclosing(&self, fid: FrameId) -> Option<(String, u32)> {
        let (pf, pi) = self.frame(fid).owner?;
        let attempt = match &self.frame(pf).state[pi] {
            State::Running(r) => r.attempt.attempt,
            _ => 0,
        };
        Some((self.path(pf, pi), attempt))
    }

    /// The variables and step outputs an expression of frame `fid` reads.
    fn bindings(&self, fid: FrameId, value: &Compiled) -> Bindings {
        let mut bindings = Bindings::new();
        bindings.insert("input".to_owned(), self.cx.input.clone());
        let mut steps = BTreeMap::new();
        for id in &value.reads {
            let mut found: Option<Val> = None;
            let mut at = Some(fid);
            while let Some(f) = at {
                let frame = self.frame(f);
                if let Some(output) = frame.outputs.get(id.as_str()) {
                    found = output.clone();
                    break;
                }
                at = frame.owner.map(|(pf, _)| pf);
            }
            let mut step = BTreeMap::new();
            if let Some(v) = found {
                step.insert("output".to_owned(), v);
            }
            steps.insert(id.clone(), Val::Map(Rc::new(step)));
        }
        bindings.insert("steps".to_owned(), Val::Map(Rc::new(steps)));
        let mut chain = Vec::new();
        let mut at = Some(fid);
        while let Some(f) = at {
            chain.push(f);
            at = self.frame(f).owner.map(|(pf, _)| pf);
        }
        for f in chain.into_iter().rev() {
            for (name, v) in &self.frame(f).vars {
                bindings.insert(name.clone(), v.clone());
            }
        }
        bindings
    }

    fn evaluate(&self, fid: FrameId, value: &Compiled) -> Result<Val, Failure> {
        values::evaluate(&value.tree, &self.bindings(fid, value), self.cx.budget)
    }

    fn evaluate_with(
        &self,
        fid: FrameId,
        value: &Compiled,
        extra: &[(&str, &Val)],
    ) -> Result<Val, Failure> {
        let mut bindings = self.bindings(fid, value);
        for (name, v) in extra {
            bindings.insert((*name).to_owned(), (*v).clone());
        }
        values::evaluate(&value.tree, &bindings, self.cx.budget)
    }

    // ----- events -----

    /// Emits `event` through the oracle; its ticket (0 when nothing needs waiting for).
    fn emit(&mut self, event: RunEvent) -> u64 {
        let ended = matches!(
            event,
            RunEvent::StepSucceeded(_) | RunEvent::StepFailed(_) | RunEvent::StepSkipped(_)
        );
        let shown = event.clone();
        match self.oracle.emit(event) {
            Emitted::Ticket(t) => {
                if ended {
                    self.steps_ended += 1;
                }
                self.observer.event(&shown, t != 0);
                t
            }
            Emitted::Differs => {
                if let Some(d) = self.oracle.difference().cloned() {
                    self.end = Some(End::Differs(d));
                }
                0
            }
        }
    }

    // ----- starting steps -----

    /// Starts step `i` of frame `fid`, whose dependencies have finished.
    fn start_step(&mut self, fid: FrameId, i: usize) {
        // A queued entry may outlive its frame, whose slot a new frame took: only a step
        // that waits for nothing starts.
        if self.frames[fid].is_none()
            || !matches!(self.frame(fid).state[i], State::Waiting)
            || self.frame(fid).waiting_on[i] != 0
        {
            return;
        }
        let f = self.frame(fid);
        if self.stopping || self.end.is_some() || f.doomed || f.failure.is_some() {
            self.not_run(fid, i);
            return;
        }
        let step: &'p Step = &f.steps[i];
        let requirement = step
            .deps
            .iter()
            .map(|&d| f.tickets[d])
            .fold(f.base_ticket, u64::max);
        let path = self.path(fid, i);
        let enclosing = self.enclosing(fid);
        let mut memory = match self.memory.remove(&path) {
            Some(m) => m,
            None => self.seed_memory(&path, enclosing.as_ref()),
        };
        if memory.execution != enclosing {
            memory.execution = enclosing;
            memory.tries = 0;
        }
        // What is known of this step: from this walk, else (resume, retry) from the log.
        let known = match &memory.done {
            Some(output) => Some(Known::Reuse(output.clone())),
            None if !memory.consulted && self.oracle.reuses() => {
                memory.consulted = true;
                self.oracle.latest(&path).map(|(n, latest)| match latest {
                    Latest::Succeeded(output) => {
                        let compound = matches!(step.kind, StepKind::Branch | StepKind::Loop);
                        Known::Reuse(output.filter(|_| !compound).map(|v| Val::from_json(&v)))
                    }
                    Latest::Skipped => Known::Reuse(None),
                    Latest::Failed(failure) if memory.tries >= step.max_attempts => {
                        Known::Failed(failure)
                    }
                    Latest::Failed(_) => Known::Next,
                    Latest::Open => Known::Open(n),
                })
            }
            None => None,
        };
        memory.consulted = true;
        let attempt = match &known {
            Some(Known::Open(n)) => *n,
            _ => memory.attempt + 1,
        };
        match known {
            Some(Known::Reuse(output)) => {
                memory.done = Some(output.clone());
                self.memory.insert(path, memory);
                self.finish_step(fid, i, output, 0);
                return;
            }
            Some(Known::Failed(failure)) => {
                self.memory.insert(path, memory);
                self.fail_finally(fid, i, failure, false);
                return;
            }
            Some(Known::Open(_)) => {}
            Some(Known::Next) | None => memory.tries += 1,
        }
        memory.attempt = attempt;
        self.memory.insert(path.clone(), memory);
        if !self.oracle.may_start(&path, attempt) {
            self.not_run(fid, i);
            return;
        }
        // `when`, once per execution of the step.
        let when = match &step.when {
            None => None,
            Some(when) => match self.evaluate(fid, when) {
                Ok(Val::Bool(true)) => Some(true),
                Ok(Val::Bool(false)) => {
                    let ticket = self.emit(RunEvent::StepSkipped(StepSkipped {
                        step: path,
                        attempt,
                        when: false,
                    }));
                    self.finish_step(fid, i, None, ticket);
                    return;
                }
                Ok(other) => {
                    let failure = Failure::new(
                        Code::ExpressionFailed,
                        format!("`when` gave {}, not a bool", other.type_name()),
                    );
                    self.fail_unstarted(fid, i, attempt, failure);
                    return;
                }
                Err(failure) => {
                    self.fail_unstarted(fid, i, attempt, failure);
                    return;
                }
            },
        };
        self.frame_mut(fid).running += 1;
        self.begin_attempt(
            fid,
            i,
            Attempt {
                attempt,
                requirement,
                when,
            },
        );
    }

    /// The memory of a step reached for the first time in this walk: in the modes that
    /// reuse the log, its last attempt and how many attempts its current execution made.
    fn seed_memory(&self, path: &str, enclosing: Option<&(String, u32)>) -> Memory {
        let mut memory = Memory {
            execution: enclosing.cloned(),
            ..Memory::default()
        };
        if self.oracle.reuses() {
            let boundary = match enclosing {
                None => self.oracle.top_boundary(),
                Some((p, a)) => self.oracle.start_seq(p, *a).unwrap_or(u64::MAX),
            };
            memory.tries = self.oracle.tries_since(path, boundary);
            if let Some((attempt, _)) = self.oracle.latest(path) {
                memory.attempt = attempt;
            }
        }
        memory
    }

    /// Begins attempt `a` of step `i`: a leaf waits for a slot (and for what it reads to be
    /// durable); a compound step starts its frames.
    fn begin_attempt(&mut self, fid: FrameId, i: usize, a: Attempt) {
        if self.frame(fid).steps[i].is_leaf() {
            self.frame_mut(fid).state[i] = State::Queued(a);
            if self.is_durable(a.requirement) {
                self.slots.push_back((fid, i));
            } else {
                self.durability
                    .push(std::cmp::Reverse((a.requirement, (fid, i))));
            }
            return;
        }
        self.start_compound(fid, i, a);
    }

    /// Starts queued leaves while slots are free; whether it did anything.
    fn dispatch(&mut self) -> bool {
        let mut did = false;
        while self.held < self.cx.max_parallel.max(1) {
            let Some((fid, i)) = self.slots.pop_front() else {
                break;
            };
            did = true;
            if self.frames[fid].is_none() {
                continue;
            }
            let State::Queued(a) = self.frame(fid).state[i] else {
                continue;
            };
            if self.stopping || self.end.is_some() {
                self.frame_mut(fid).running -= 1;
                self.not_run(fid, i);
                continue;
            }
            self.held += 1;
            self.start_leaf(fid, i, a);
        }
        did
    }

    /// A step that will not start: it and what depends on it stay out of the run.
    fn not_run(&mut self, fid: FrameId, i: usize) {
        let mut stack = vec![i];
        while let Some(i) = stack.pop() {
            let f = self.frame_mut(fid);
            if !matches!(f.state[i], State::Waiting | State::Queued(_)) {
                continue;
            }
            f.state[i] = State::NotRun;
            f.not_run += 1;
            stack.extend(f.steps[i].dependents.iter().copied());
        }
        self.to_check.push(fid);
    }

    /// A step whose `when` had no value fails without starting (and without retries: the
    /// same expression gives the same error).
    fn fail_unstarted(&mut self, fid: FrameId, i: usize, attempt: u32, failure: Failure) {
        let path = self.path(fid, i);
        self.emit(RunEvent::StepFailed(StepFailed {
            step: path,
            attempt,
            failure: failure.clone(),
        }));
        self.fail_finally(fid, i, failure, false);
    }

    // ----- finishing steps -----

    /// Step `i` of frame `fid` finished with `output` (absent: skipped, or a branch or
    /// loop), its last event `ticket`.
    fn finish_step(&mut self, fid: FrameId, i: usize, output: Option<Val>, ticket: u64) {
        let was_running = matches!(
            self.frame(fid).state[i],
            State::Running(_) | State::Queued(_)
        );
        if let State::Running(r) = &self.frame(fid).state[i]
            && r.slot
        {
            self.held -= 1;
        }
        let path = self.path(fid, i);
        if let Some(m) = self.memory.get_mut(&path) {
            m.done = Some(output.clone());
        }
        self.frame_mut(fid).state[i] = State::Done;
        let f = self.frame_mut(fid);
        f.state[i] = State::Done;
        let id: &'p str = &f.steps[i].id;
        f.outputs.insert(id, output);
        f.tickets[i] = ticket;
        f.unfinished -= 1;
        if was_running {
            f.running -= 1;
        }
        let dependents = f.steps[i].dependents.clone();
        for j in dependents {
            let f = self.frame_mut(fid);
            f.waiting_on[j] -= 1;
            if f.waiting_on[j] == 0 && matches!(f.state[j], State::Waiting) {
                self.ready.push_back((fid, j));
            }
        }
        self.check_frame(fid);
    }

    /// The running attempt of step `i` failed with `failure` (recorded here): another
    /// attempt when its retries allow and the run goes on, else the step fails.
    fn attempt_failed(&mut self, fid: FrameId, i: usize, failure: Failure) {
        let path = self.path(fid, i);
        let (attempt, requirement, when) = match &mut self.frame_mut(fid).state[i] {
            State::Running(r) => {
                let slot = std::mem::take(&mut r.slot);
                let a = r.attempt;
                if slot {
                    self.held -= 1;
                }
                (a.attempt, a.requirement, a.when)
            }
            _ => (0, 0, None),
        };
        self.emit(RunEvent::StepFailed(StepFailed {
            step: path.clone(),
            attempt,
            failure: failure.clone(),
        }));
        if matches!(self.end, Some(End::Differs(_))) {
            return;
        }
        let max = self.frame(fid).steps[i].max_attempts;
        let tries = self.memory.get(&path).map_or(u32::MAX, |m| m.tries);
        let top = self.frame(fid).owner.is_none();
        let granted = tries >= max && top && self.oracle.grant(&path, attempt);
        if !self.stopping && !self.frame(fid).doomed && (tries < max || granted) {
            if let Some(m) = self.memory.get_mut(&path) {
                m.tries = if granted { 1 } else { m.tries + 1 };
                m.attempt = attempt + 1;
            }
            let next = Attempt {
                attempt: attempt + 1,
                requirement,
                when,
            };
            self.begin_attempt(fid, i, next);
            return;
        }
        self.fail_finally(fid, i, failure, true);
    }

    /// Step `i` failed for good (no attempt left): its frame fails once what runs in it
    /// has finished.
    fn fail_finally(&mut self, fid: FrameId, i: usize, failure: Failure, was_running: bool) {
        let mut failure = failure;
        if failure.cause.is_none() {
            failure.cause = Some(self.path(fid, i));
        }
        let f = self.frame_mut(fid);
        f.state[i] = State::Failed;
        f.unfinished -= 1;
        if was_running {
            f.running -= 1;
        }
        f.failure.get_or_insert(failure);
        self.doom(fid);
        self.check_frame(fid);
    }

    /// A failure in frame `fid` will fail it: nothing new starts there, nor in the frames
    /// above it whose steps will fail in turn (no retry left), nor anywhere once it
    /// reaches the top.
    fn doom(&mut self, fid: FrameId) {
        let mut at = fid;
        loop {
            self.frame_mut(at).doomed = true;
            let Some((pf, pi)) = self.frame(at).owner else {
                self.stopping = true;
                return;
            };
            let path = self.path(pf, pi);
            let max = self.frame(pf).steps[pi].max_attempts;
            let tries = self.memory.get(&path).map_or(u32::MAX, |m| m.tries);
            if tries < max {
                return;
            }
            let attempt = match &self.frame(pf).state[pi] {
                State::Running(r) => r.attempt.attempt,
                _ => 0,
            };
            if self.frame(pf).owner.is_none() && self.oracle.grant(&path, attempt) {
                return;
            }
            at = pf;
        }
    }

    /// Whether frame `fid` is over, and what follows.
    fn check_frame(&mut self, fid: FrameId) {
        let Some(f) = self.frames[fid].as_ref() else {
            return;
        };
        if f.running > 0 {
            return;
        }
        if let Some(failure) = f.failure.clone() {
            self.frame_over(fid, Over::Failed(failure));
        } else if f.unfinished == 0 {
            self.frame_over(fid, Over::Done);
        } else if f.unfinished == f.not_run {
            self.frame_over(fid, Over::Abandoned);
        }
    }

    fn frame_over(&mut self, fid: FrameId, over: Over) {
        let kind = self.frame(fid).kind;
        let Some((pf, pi)) = self.frame(fid).owner else {
            self.run_over(over);
            return;
        };
        match kind {
            FrameKind::Item(k) => self.item_over(pf, pi, fid, k, over),
            FrameKind::Iteration(n) => self.iteration_over(pf, pi, fid, n, over),
            FrameKind::Case => self.case_over(pf, pi, fid, over),
            FrameKind::Root => {}
        }
    }

    /// The top-level frame is over: the run's output, or its failure.
    fn run_over(&mut self, over: Over) {
        if self.end.is_some() {
            return;
        }
        let end = match over {
            Over::Failed(failure) => {
                let step = failure.cause.clone();
                let mut f = failure;
                f.cause = None;
                End::Failed { step, failure: f }
            }
            Over::Abandoned => End::Stalled,
            Over::Done => match self.output() {
                Ok(output) => End::Succeeded(output),
                Err(failure) => End::Failed {
                    step: None,
                    failure,
                },
            },
        };
        self.record_end(end);
    }

    /// The workflow's output, checked against the definition's output schema.
    fn output(&mut self) -> Result<Value, Failure> {
        let Some(output) = &self.program.output else {
            return Ok(Value::Null);
        };
        let v = self.evaluate(0, output)?;
        let json = values::to_json(&v)?;
        if let Err(m) = self
            .schemas
            .check("workflow:output", self.cx.output_schema, &json)
        {
            return Err(m.failure("the workflow's output"));
        }
        Ok(json)
    }

    /// Records how the run ended, and compares it with the log's end in replay.
    fn record_end(&mut self, end: End) {
        let event = match &end {
            End::Succeeded(output) => RunEvent::RunSucceeded(RunSucceeded {
                output: output.clone(),
                usage: self.usage,
            }),
            End::Failed { step, failure } => RunEvent::RunFailed(RunFailed {
                step: step.clone(),
                failure: failure.clone(),
            }),
            _ => {
                self.end = Some(end);
                return;
            }
        };
        if self.oracle.mode() == Mode::Replay {
            if let Some(recorded) = self.oracle.recorded().end().cloned() {
                let (mut a, mut b) = (recorded.data(), event.data());
                // Token counts are the models' own; the output and the failure are the
                // run's.
                for v in [&mut a, &mut b] {
                    if let Value::Object(m) = v {
                        m.remove("usage");
                    }
                }
                if recorded.name() != event.name() || a != b {
                    let (pointer, x, y) = if recorded.name() == event.name() {
                        crate::log::first_difference(&a, &b)
                            .map(|(p, x, y)| (p, x.cloned(), y.cloned()))
                            .unwrap_or_default()
                    } else {
                        (
                            String::new(),
                            Some(Value::String(recorded.name().into())),
                            Some(Value::String(event.name().into())),
                        )
                    };
                    let d = Difference {
                        step: None,
                        event: recorded.name().to_owned(),
                        pointer,
                        recorded: x,
                        replayed: y,
                    };
                    self.oracle.differ(d.clone());
                    self.end = Some(End::Differs(d));
                    return;
                }
            }
            if let Some(d) = self.oracle.unmatched() {
                self.oracle.differ(d.clone());
                self.end = Some(End::Differs(d));
                return;
            }
            self.end = Some(end);
            return;
        }
        let shown = event.clone();
        match self.oracle.emit(event) {
            Emitted::Ticket(t) => self.observer.event(&shown, t != 0),
            Emitted::Differs => {}
        }
        self.end = Some(end);
    }
}

/// How a frame ended.
enum Over {
    Done,
    Failed(Failure),
    /// Nothing left can start (replay of a run that stopped first).
    Abandoned,
}

/// What is known of a step reached again.
enum Known {
    /// Its latest attempt closed as a success (or a skip): its output.
    Reuse(Option<Val>),
    /// Its latest attempt failed and its execution has no attempt left.
    Failed(Failure),
    /// Its latest attempt failed; the next one runs.
    Next,
    /// Its attempt `n` was in flight: it is taken up again.
    Open(u32),
}

impl Step {
    /// Whether the step is a tool, model or code step (an effect, which takes a slot).
    pub(crate) fn is_leaf(&self) -> bool {
        matches!(
            self.kind,
            lwir_spec::ir::StepKind::ToolCall
                | lwir_spec::ir::StepKind::ModelCall
                | lwir_spec::ir::StepKind::CodeRun
        )
    }
}
