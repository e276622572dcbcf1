//! Tiles and sets of tiles: the 28 tiles of a double-six set (docs/rules.md section 1).
//!
//! A [`Tile`] is an index `0..28`; a [`TileSet`] is a 28-bit mask, so hands, the
//! boneyard's contents and "tiles that show pip p" are single machine words.

use std::fmt;

/// Number of tiles in a double-six set.
pub const TILE_COUNT: usize = 28;
/// Highest pip value on a half.
pub const MAX_PIP: u8 = 6;

const fn build_halves() -> ([u8; TILE_COUNT], [u8; TILE_COUNT]) {
    let mut lo = [0u8; TILE_COUNT];
    let mut hi = [0u8; TILE_COUNT];
    let mut i = 0;
    let mut a = 0u8;
    while a <= MAX_PIP {
        let mut b = a;
        while b <= MAX_PIP {
            lo[i] = a;
            hi[i] = b;
            i += 1;
            b += 1;
        }
        a += 1;
    }
    (lo, hi)
}

const HALVES: ([u8; TILE_COUNT], [u8; TILE_COUNT]) = build_halves();

const fn build_pip_masks() -> [u32; 7] {
    let mut masks = [0u32; 7];
    let mut i = 0;
    while i < TILE_COUNT {
        masks[HALVES.0[i] as usize] |= 1 << i;
        masks[HALVES.1[i] as usize] |= 1 << i;
        i += 1;
    }
    masks
}

/// `PIP_MASKS[p]`: every tile with a half showing `p`.
const PIP_MASKS: [u32; 7] = build_pip_masks();

/// One tile `[a|b]`. `[a|b]` and `[b|a]` are the same tile; it is stored as its index in
/// the order `[0|0], [0|1], .., [0|6], [1|1], .., [6|6]`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tile(u8);

impl Tile {
    /// `[0|0]`, the tile with index 0.
    pub const DOUBLE_BLANK: Tile = Tile(0);

    /// The tile with halves `a` and `b` in either order, or `None` if a half is over 6.
    pub fn new(a: u8, b: u8) -> Option<Tile> {
        if a > MAX_PIP || b > MAX_PIP {
            return None;
        }
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        // Tiles before row `lo`: 7 + 6 + .. + (7 - lo + 1).
        let row_start = lo * 7 - lo * (lo.saturating_sub(1)) / 2;
        Some(Tile(row_start + (hi - lo)))
    }

    /// The tile with this index (`0..28`), or `None`.
    pub fn from_index(index: u8) -> Option<Tile> {
        (usize::from(index) < TILE_COUNT).then_some(Tile(index))
    }

    /// Index `0..28` of the tile.
    pub fn index(self) -> u8 {
        self.0
    }

    /// The lower half.
    pub fn lo(self) -> u8 {
        HALVES.0[usize::from(self.0)]
    }

    /// The higher half.
    pub fn hi(self) -> u8 {
        HALVES.1[usize::from(self.0)]
    }

    /// Total pips of both halves.
    pub fn pips(self) -> u8 {
        self.lo() + self.hi()
    }

    /// Whether both halves are equal.
    pub fn is_double(self) -> bool {
        self.lo() == self.hi()
    }

    /// Whether one of the halves shows `pip`.
    pub fn has(self, pip: u8) -> bool {
        self.lo() == pip || self.hi() == pip
    }

    /// The half opposite to a half showing `pip` (the tile must have `pip`).
    pub fn other(self, pip: u8) -> u8 {
        if self.lo() == pip {
            self.hi()
        } else {
            self.lo()
        }
    }

    /// Every tile of the set, in index order.
    pub fn all() -> impl Iterator<Item = Tile> {
        (0..TILE_COUNT as u8).map(Tile)
    }
}

impl fmt::Debug for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}|{}]", self.lo(), self.hi())
    }
}

impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A set of tiles as a bitmask (bit `i` is the tile with index `i`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TileSet(u32);

impl TileSet {
    /// No tiles.
    pub const EMPTY: TileSet = TileSet(0);
    /// All 28 tiles.
    pub const FULL: TileSet = TileSet((1 << TILE_COUNT) - 1);

    /// The set with this bitmask, or `None` if a bit above 27 is set.
    pub fn from_bits(bits: u32) -> Option<TileSet> {
        (bits & !Self::FULL.0 == 0).then_some(TileSet(bits))
    }

    /// The bitmask (bit `i` is the tile with index `i`).
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Every tile showing `pip` on a half.
    pub fn with_pip(pip: u8) -> TileSet {
        TileSet(PIP_MASKS[usize::from(pip.min(MAX_PIP))])
    }

    /// Every tile showing any of the pip numbers in `pips` (bit `n` for `n` pips).
    pub fn with_any_pip(pips: u8) -> TileSet {
        let mut set = 0;
        for pip in 0..=MAX_PIP {
            if pips & (1 << pip) != 0 {
                set |= PIP_MASKS[usize::from(pip)];
            }
        }
        TileSet(set)
    }

    pub fn contains(self, tile: Tile) -> bool {
        self.0 & (1 << tile.0) != 0
    }

    pub fn insert(&mut self, tile: Tile) {
        self.0 |= 1 << tile.0;
    }

    pub fn remove(&mut self, tile: Tile) {
        self.0 &= !(1 << tile.0);
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn union(self, other: TileSet) -> TileSet {
        TileSet(self.0 | other.0)
    }

    pub fn intersection(self, other: TileSet) -> TileSet {
        TileSet(self.0 & other.0)
    }

    /// Total pips of every tile in the set.
    pub fn pips(self) -> u32 {
        self.iter().map(|t| u32::from(t.pips())).sum()
    }

    /// The tiles in index order.
    pub fn iter(self) -> TileSetIter {
        TileSetIter(self.0)
    }
}

impl FromIterator<Tile> for TileSet {
    fn from_iter<I: IntoIterator<Item = Tile>>(iter: I) -> Self {
        let mut set = TileSet::EMPTY;
        for tile in iter {
            set.insert(tile);
        }
        set
    }
}

impl fmt::Debug for TileSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over a [`TileSet`], lowest index first.
pub struct TileSetIter(u32);

impl Iterator for TileSetIter {
    type Item = Tile;

    fn next(&mut self) -> Option<Tile> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as u8;
        self.0 &= self.0 - 1;
        Some(Tile(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_eight_distinct_tiles_seven_doubles() {
        let tiles: Vec<Tile> = Tile::all().collect();
        assert_eq!(tiles.len(), 28);
        assert_eq!(tiles.iter().filter(|t| t.is_double()).count(), 7);
        for (i, t) in tiles.iter().enumerate() {
            assert_eq!(usize::from(t.index()), i);
            assert_eq!(Tile::new(t.lo(), t.hi()), Some(*t));
            assert_eq!(Tile::new(t.hi(), t.lo()), Some(*t), "[a|b] == [b|a]");
            assert!(t.lo() <= t.hi() && t.hi() <= 6);
        }
        assert_eq!(TileSet::FULL.len(), 28);
        assert_eq!(TileSet::FULL.pips(), 168);
    }

    #[test]
    fn out_of_range_halves_are_no_tile() {
        assert_eq!(Tile::new(7, 0), None);
        assert_eq!(Tile::new(0, 200), None);
        assert_eq!(Tile::from_index(28), None);
        assert_eq!(TileSet::from_bits(1 << 28), None);
    }

    #[test]
    fn pip_masks_hold_exactly_the_tiles_with_that_pip() {
        for p in 0..=6 {
            let set = TileSet::with_pip(p);
            assert_eq!(set.len(), 7);
            for t in Tile::all() {
                assert_eq!(set.contains(t), t.has(p));
            }
        }
    }

    #[test]
    fn tileset_basics() {
        let mut s = TileSet::EMPTY;
        let t = Tile::new(6, 4).unwrap();
        s.insert(t);
        assert!(s.contains(t));
        assert_eq!(s.pips(), 10);
        assert_eq!(format!("{s:?}"), "[[4|6]]");
        s.remove(t);
        assert!(s.is_empty());
        assert_eq!(t.other(6), 4);
        assert_eq!(t.other(4), 6);
    }
}
