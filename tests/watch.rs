//! A watched call: progress by window on a long text, the same entities as unwatched, and a
//! cancel between windows that stops the call (and leaves the engine usable); on the CPU and on
//! a GPU adapter (lavapipe in CI), where a watched call also goes one window per submission.

mod common;
use common::*;
use pollster::block_on;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use webert::engine::{Device, Engine, GpuOptions, LoadOptions, Watch};
use webert::error::Error;
use webert::model::ModelFiles;
use webert::tasks::ner::{ner, Aggregation, NerOptions};

/// Records every report; answers `false` once `stop_at` windows are done.
struct Recorder {
    seen: Mutex<Vec<(usize, usize)>>,
    stop_at: usize,
}

impl Watch for Recorder {
    fn between(&self, done: usize, total: usize) -> Pin<Box<dyn Future<Output = bool>>> {
        self.seen.lock().unwrap().push((done, total));
        let go_on = done < self.stop_at;
        Box::pin(async move { go_on })
    }
}

#[test]
fn a_watched_call_reports_each_window_and_stops_when_told() {
    check(&engine(&model_dir("pii")), 200);
}

#[test]
fn on_a_gpu_a_watched_call_reports_each_window_too() {
    // A tiny token classifier (64-token windows): many windows, each cheap on lavapipe.
    let files = ModelFiles::from_dir(&root().join("tests/tiny/bert-gelu-tanh-f16")).unwrap();
    let options = LoadOptions {
        device: Device::Gpu,
        gpu: GpuOptions {
            max_binding: None,
            f16: Some(false),
            ..GpuOptions::DEFAULT
        },
        ..Default::default()
    };
    match block_on(Engine::load(files, options)) {
        Ok(e) => {
            check(&e, 20);
            assert!(e.backend().starts_with("gpu"), "{}", e.backend());
        }
        Err(err)
            if std::env::var_os("CI").is_some()
                || std::env::var_os("WEBERT_REQUIRE_GPU").is_some() =>
        {
            panic!("a GPU adapter is required here: {err}")
        }
        Err(err) => eprintln!("skipping GPU test: {err}"),
    }
}

fn check(e: &Engine, repeats: usize) {
    let text = "John Smith lives at 42 Elm Street, Springfield. ".repeat(repeats);
    let opts = NerOptions {
        aggregation: Aggregation::First,
        ..Default::default()
    };
    let plain = block_on(ner(e, &text, &opts)).unwrap();

    let all = Arc::new(Recorder {
        seen: Mutex::new(Vec::new()),
        stop_at: usize::MAX,
    });
    e.set_watch(Some(all.clone()));
    let watched = block_on(ner(e, &text, &opts)).unwrap();
    e.set_watch(None);
    assert_eq!(watched.len(), plain.len());
    for (a, b) in watched.iter().zip(&plain) {
        assert_eq!(
            (&a.entity_group, a.start, a.end),
            (&b.entity_group, b.start, b.end)
        );
        assert!((a.score - b.score).abs() < 1e-4);
    }
    let seen = all.seen.lock().unwrap().clone();
    let total = seen[0].1;
    assert!(total >= 3, "the text should need several windows: {seen:?}");
    let want: Vec<(usize, usize)> = (0..=total).map(|d| (d, total)).collect();
    assert_eq!(seen, want, "one report per window and one at the end");

    let stop = Arc::new(Recorder {
        seen: Mutex::new(Vec::new()),
        stop_at: 2,
    });
    e.set_watch(Some(stop.clone()));
    let err = block_on(ner(e, &text, &opts)).unwrap_err();
    e.set_watch(None);
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert_eq!(
        stop.seen.lock().unwrap().len(),
        3,
        "stopped before the third window"
    );
    assert_eq!(block_on(ner(e, &text, &opts)).unwrap().len(), plain.len());
}
