//! A test that must own its whole process (a global tracing subscriber, the process's
//! CPU time or its open descriptors) runs again, alone, in a child process of this test
//! binary: its body begins with
//!
//! ```ignore
//! if !common::alone::alone(module_path!(), "the_test_s_name").await {
//!     return;
//! }
//! ```
//!
//! In the child, `alone` answers true and the body runs, with the process to itself.
//! Everywhere else it runs that child (this executable, filtered to exactly this test,
//! one thread) while holding [`super::heavy`] (the child loads the machine like a heavy
//! test), requires it to pass exactly this one test, and answers false. One binary
//! with children instead of a binary per such test: the shared helpers and the crate's
//! generic code are compiled and linked once.

use std::process::Command;

/// The environment variable that tells the child which test it is to run.
const ALONE: &str = "ALLFIVES_TEST_ALONE";

/// True in the child that runs test `name` of `module` (the test's `module_path!()`);
/// elsewhere runs that child, asserts it passed that test alone, and answers false.
pub async fn alone(module: &str, name: &str) -> bool {
    // `module_path!()` starts with the crate (`it::junk`); libtest names `junk::NAME`.
    let path = match module.split_once("::") {
        Some((_, rest)) => format!("{rest}::{name}"),
        None => name.to_owned(),
    };
    if std::env::var_os(ALONE).is_some_and(|v| v == path.as_str()) {
        return true;
    }
    let _heavy = super::heavy().await;
    let exe = std::env::current_exe().expect("the test binary's own path");
    let out = Command::new(exe)
        .args([path.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(ALONE, &path)
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Shown by libtest if this test fails.
    println!("--- {path}, alone in a process of its own:\n{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{path}, alone in its own process, failed ({})",
        out.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed; 0 failed"),
        "{path}: the child process did not run exactly this one test"
    );
    false
}
