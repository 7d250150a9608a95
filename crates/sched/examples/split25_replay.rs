//! Scratch: replays a capture with the queue-run model on and off.
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let capture = elevator_trace::sched_log::read(std::path::Path::new(&path)).unwrap();
    for (label, runs, park, max) in [("runs 1", true, true, 1), ("runs 1 + issue runs", true, true, 101), ("park only (before)", false, true, 1)] {
        let mut options = elevator_sched::conform::ConformOptions::default();
        options.queue_runs = runs;
        options.park_when_full = park;
        options.run_picks_max = max % 100;
        options.runs_from_issues = max > 100;
        options.score_kyber_depths = false;
        let r = elevator_sched::conform::replay(&capture, options).unwrap();
        if max == 1 && std::env::var("SHOW").is_ok() { for d in r.disagreements.iter().filter(|d| !d.cascaded).take(3) { println!("#{} {} ns {:?}\n  K {:?}\n  O {:?}\n  {}", d.decision, d.time_ns, d.cause, d.kernel, d.ours, d.our_state); } }
        println!("{label}: {} / {} = {:.2} % first {} cascaded {} reordered {} causes {:?}", r.identical, r.decisions, 100.0 * r.agreement, r.first_disagreements, r.cascaded, r.reordered_issues, r.causes);
    }
}
#[allow(dead_code)]
fn unused() {}
