//! Built-in reducers for fields several branches write in one wave.

/// Lists: start from the snapshot's list; each branch's list (which holds the snapshot's
/// items first) contributes what it added after them, or all of it when it does not start
/// with them.
#[allow(clippy::ptr_arg)] // a reducer takes `&Field`, and the field is a `Vec`
pub fn concat<T: Clone + PartialEq>(base: &Vec<T>, values: Vec<Vec<T>>) -> Vec<T> {
    let mut merged = base.clone();
    for value in values {
        if value.len() >= base.len() && value[..base.len()] == base[..] {
            merged.extend_from_slice(&value[base.len()..]);
        } else {
            merged.extend(value);
        }
    }
    merged
}

/// Maps: the snapshot's map updated by each branch's map in ready order (a later branch wins
/// a key).
pub fn merge_maps<M, K, V>(base: &M, values: Vec<M>) -> M
where
    M: Clone + Extend<(K, V)> + IntoIterator<Item = (K, V)>,
{
    let mut merged = base.clone();
    for value in values {
        merged.extend(value);
    }
    merged
}
