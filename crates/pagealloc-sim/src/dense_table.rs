//! Arrays indexed by pfn or line number that grow on demand. Growth allocates zeroed memory
//! (the host maps it lazily) and copies the old part, so a table sized for a 64 GiB machine
//! costs memory only where it is used.

/// The slot at `index`, growing `table` to the next power of two if needed. `T::default()`
/// must be all-zero bytes for the lazy mapping to apply (it is for the integers used here).
#[inline]
pub fn slot<T: Copy + Default>(table: &mut Vec<T>, index: usize) -> &mut T {
    if table.len() <= index {
        grow(table, (index + 1).next_power_of_two());
    }
    &mut table[index]
}

/// Grows `table` to at least `len` entries at once (an empty table is then one zeroed
/// allocation, mapped as it is written).
pub fn reserve<T: Copy + Default>(table: &mut Vec<T>, len: usize) {
    if table.len() < len {
        grow(table, len);
    }
}

/// The slot at `number` of row `row` in a table of rows, growing both as needed.
#[inline]
pub fn row_slot<T: Copy + Default>(rows: &mut Vec<Vec<T>>, row: usize, number: usize) -> &mut T {
    if rows.len() <= row {
        rows.resize_with(row + 1, Vec::new);
    }
    slot(&mut rows[row], number)
}

/// Grows each row `i` of `rows` to at least `lens[i]` entries at once.
pub fn reserve_rows<T: Copy + Default>(rows: &mut Vec<Vec<T>>, lens: &[usize]) {
    if rows.len() < lens.len() {
        rows.resize_with(lens.len(), Vec::new);
    }
    for (row, &len) in rows.iter_mut().zip(lens) {
        reserve(row, len);
    }
}

#[cold]
fn grow<T: Copy + Default>(table: &mut Vec<T>, len: usize) {
    let mut grown = vec![T::default(); len];
    grown[..table.len()].copy_from_slice(table);
    *table = grown;
}

#[cfg(test)]
mod tests {
    #[test]
    fn grows_to_fit_and_keeps_what_was_there() {
        let mut table: Vec<u32> = Vec::new();
        *super::slot(&mut table, 3) = 7;
        assert_eq!(table.len(), 4);
        *super::slot(&mut table, 100) = 9;
        assert_eq!(table.len(), 128);
        assert_eq!((table[3], table[100], table[50]), (7, 9, 0));
    }
}
