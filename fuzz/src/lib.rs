//! Helpers shared by the fuzz targets.

use serde_json::Value as J;

/// The example WorkflowDefinition the planner-answer and fix targets validate against.
pub const DEFINITION: &[u8] = include_bytes!("../../examples/issue-triage/workflow.json");

/// The definition as a pipeline source.
pub fn definition() -> lwir_validators::pipeline::Source {
    lwir_validators::pipeline::Source {
        name: "workflow.json".to_owned(),
        bytes: DEFINITION.to_vec(),
    }
}

/// JSON equality with numbers compared by value: the reader keeps `-0` and `1` as
/// integers while `serde_json` may hold the same number as a double.
pub fn same_json(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Number(x), J::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Run once before fuzzing (each target's `init`): gives libFuzzer's crash handler an
/// alternate signal stack, so that a stack overflow is reported as a crash with its input
/// saved, like any panic. Without a sanitizer (`-s none`) nothing else sets one up, and
/// the handler, running on the exhausted stack, would die before saving the input.
///
/// libFuzzer keeps `SA_ONSTACK` from the SIGSEGV disposition it finds when it installs
/// its own handler (after this runs), so the default disposition is set here with it.
pub fn init() {
    const SIZE: usize = 1 << 20;
    let stack: &'static mut [u8] = Box::leak(vec![0u8; SIZE].into_boxed_slice());
    // SAFETY: `stack` is leaked, so it outlives the thread; the structures are plain data
    // filled in before the calls, which only read them.
    unsafe {
        let alt = libc::stack_t {
            ss_sp: stack.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: SIZE,
        };
        assert_eq!(libc::sigaltstack(&alt, std::ptr::null_mut()), 0);
        for signal in [libc::SIGSEGV, libc::SIGBUS] {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_DFL;
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
        }
    }
}
