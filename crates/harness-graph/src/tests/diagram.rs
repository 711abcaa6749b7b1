// `diagram()` against the seven pictures of spec §2.4, compared as whole strings.

use crate::topology::{Condition, Topology};

fn graph(
    nodes: &[(&str, bool, bool)],
    edges: &[(&str, &str, Option<Condition>, bool)],
) -> Topology {
    let mut g = Topology::new();
    for (name, start, end) in nodes {
        g.add(*name, *start, *end).unwrap();
    }
    for (source, target, condition, is_loop) in edges {
        g.connect(source, target, condition.clone(), *is_loop)
            .unwrap();
    }
    g.validate().unwrap();
    g
}

#[test]
fn readme_quickstart() {
    let g = graph(
        &[
            ("fetch_sales", true, false),
            ("fetch_churn", true, false),
            ("summarize", false, true),
        ],
        &[
            ("fetch_sales", "summarize", None, false),
            ("fetch_churn", "summarize", None, false),
        ],
    );
    assert_eq!(
        g.diagram(),
        "╭═════════════╮   ╭═════════════╮
│ fetch_sales │   │ fetch_churn │
╰═════════════╯   ╰═════════════╯
       ╰────────╮        │
                ├────────╯
                ▼
          ╭═══════════╮
          │ summarize │
          ╰═══════════╯"
    );
}

#[test]
fn refinement_loop() {
    let g = graph(
        &[
            ("load_rubric", true, false),
            ("draft", true, false),
            ("critique", false, false),
            ("publish", false, true),
        ],
        &[
            ("load_rubric", "critique", None, false),
            ("draft", "critique", None, false),
            ("critique", "publish", Some(Condition::Anonymous), false),
            (
                "critique",
                "draft",
                Some(Condition::Named("needs_work".into())),
                true,
            ),
        ],
    );
    assert_eq!(
        g.diagram(),
        "╭═════════════╮   ╭═══════╮
│ load_rubric │   │ draft │◀─╮
╰═════════════╯   ╰═══════╯  │
       ╰─────╮        │      │
             ├────────╯      │
             ▼               │
       ╭──────────╮          │
       │ critique │──────────╯
       ╰──────────╯
             │
             ▽
        ╭═════════╮
        │ publish │
        ╰═════════╯

  ↺ critique → draft when needs_work
  ▽ conditional edge"
    );
}

#[test]
fn diamond() {
    let g = graph(
        &[
            ("left", true, false),
            ("right", true, false),
            ("merge", false, false),
            ("done", false, true),
        ],
        &[
            ("left", "merge", None, false),
            ("right", "merge", None, false),
            ("merge", "done", None, false),
        ],
    );
    assert_eq!(
        g.diagram(),
        "╭══════╮   ╭═══════╮
│ left │   │ right │
╰══════╯   ╰═══════╯
    ╰────╮     │
         ├─────╯
         ▼
     ╭───────╮
     │ merge │
     ╰───────╯
         ╰╮
          ▼
      ╭══════╮
      │ done │
      ╰══════╯"
    );
}

#[test]
fn skipping_uses_a_dummy_column() {
    let g = graph(
        &[("a", true, false), ("b", false, false), ("c", false, true)],
        &[
            ("a", "b", None, false),
            ("b", "c", None, false),
            ("a", "c", None, false),
        ],
    );
    assert_eq!(
        g.diagram(),
        "  ╭═══╮
  │ a │
  ╰═══╯
  ╭─┤
  │ ╰───╮
  ▼     │
╭───╮   │
│ b │   │
╰───╯   │
  │ ╭───╯
  ╰─┤
    ▼
  ╭═══╮
  │ c │
  ╰═══╯"
    );
}

#[test]
fn looping() {
    let g = graph(
        &[("agent", true, false), ("tools", false, false)],
        &[
            ("agent", "tools", Some(Condition::Anonymous), false),
            ("tools", "agent", None, true),
        ],
    );
    assert_eq!(
        g.diagram(),
        "╭═══════╮
│ agent │◀─╮
╰═══════╯  │
    │      │
    ▽      │
╭───────╮  │
│ tools │──╯
╰───────╯

  ↺ tools → agent
  ▽ conditional edge"
    );
}

#[test]
fn a_blocked_margin_is_noted_not_drawn() {
    let g = graph(
        &[
            ("plan", true, false),
            ("work", false, false),
            ("sibling_on_the_right", false, false),
            ("done", false, true),
        ],
        &[
            ("plan", "work", None, false),
            ("plan", "sibling_on_the_right", None, false),
            ("work", "done", None, false),
            ("sibling_on_the_right", "done", None, false),
            ("work", "plan", None, true),
        ],
    );
    assert_eq!(
        g.diagram(),
        "             ╭══════╮
             │ plan │
             ╰══════╯
    ╭────────────┤
    │            ╰─────╮
    ▼                  ▼
╭──────╮   ╭──────────────────────╮
│ work │   │ sibling_on_the_right │
╰──────╯   ╰──────────────────────╯
    ╰────────────╮     │
                 ├─────╯
                 ▼
             ╭══════╮
             │ done │
             ╰══════╯

  ↺ work → plan  (not drawn: no clear margin)"
    );
}

#[test]
fn a_single_node_and_wide_names() {
    let g = graph(&[("only", true, false)], &[]);
    assert_eq!(g.diagram(), "╭══════╮\n│ only │\n╰══════╯");

    let g = graph(
        &[
            ("取得", true, false),
            ("plain", true, false),
            ("done", false, true),
        ],
        &[
            ("取得", "done", None, false),
            ("plain", "done", None, false),
        ],
    );
    let diagram = g.diagram();
    let mut lines = diagram.lines();
    assert_eq!(lines.next(), Some("╭══════╮   ╭═══════╮"));
    assert_eq!(lines.next(), Some("│ 取得 │   │ plain │"));
    assert_eq!(Topology::new().diagram(), "");
}
