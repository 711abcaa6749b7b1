// The checks of spec §2.1 and the shapes handed to the executor.

use harness_core::{Error, ErrorKind};

use crate::topology::{Condition, LoopInfo, Topology};

fn message(result: Result<(), Error>) -> String {
    let err = result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration, "{err}");
    err.to_string()
}

#[test]
fn names_are_unique_and_connections_name_registered_nodes() {
    let mut g = Topology::new();
    g.add("a", true, false).unwrap();
    assert_eq!(
        g.add("a", false, false).unwrap_err().to_string(),
        "Node already exists: a; give each node its own name"
    );
    assert_eq!(
        message(g.connect("zz", "a", None, false)),
        "Unknown node: zz; registered nodes: a"
    );
    // The source is resolved before the target.
    assert_eq!(
        message(g.connect("x", "y", None, false)),
        "Unknown node: x; registered nodes: a"
    );
}

#[test]
fn build_checks_in_order() {
    let mut g = Topology::new();
    g.add("a", false, false).unwrap();
    assert!(message(g.validate()).starts_with("Graph has no start node"));

    let mut g = Topology::new();
    g.add("a", true, false).unwrap();
    g.add("orphan", false, false).unwrap();
    assert!(
        message(g.validate())
            .starts_with("Node 'orphan' is unreachable: no start flag and no incoming edges")
    );

    let mut g = Topology::new();
    for name in ["s", "a", "b"] {
        g.add(name, name == "s", false).unwrap();
    }
    g.connect("s", "a", None, false).unwrap();
    g.connect("a", "b", None, false).unwrap();
    g.connect("b", "a", None, false).unwrap();
    let err = message(g.validate());
    assert!(
        err.starts_with("Graph contains a cycle") && err.contains("loop"),
        "{err}"
    );

    // The same back-edge declared as a loop is fine, and so is a self-loop.
    let mut g = Topology::new();
    for name in ["s", "a", "b"] {
        g.add(name, name == "s", false).unwrap();
    }
    g.connect("s", "a", None, false).unwrap();
    g.connect("a", "b", None, false).unwrap();
    g.connect("b", "a", Some(Condition::Named("again".into())), true)
        .unwrap();
    g.connect("b", "b", None, true).unwrap();
    g.validate().unwrap();
    assert_eq!(
        g.loops(),
        vec![
            LoopInfo {
                source: 2,
                target: 1,
                condition: Some(Condition::Named("again".into())),
                body: vec![1, 2]
            },
            LoopInfo {
                source: 2,
                target: 2,
                condition: None,
                body: vec![2]
            },
        ]
    );
    assert_eq!(
        g.predecessors(),
        vec![vec![], vec![(0, None)], vec![(1, None)]]
    );
}
