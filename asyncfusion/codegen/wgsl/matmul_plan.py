"""Matmul plans: which schedule (:class:`MatmulTiles`) a launch runs, split over K or not.

:func:`default_plan` is the choice without measurements: the largest tile that still
gives a big GPU a wave of workgroups, and on a GPU a split of K into slices where few
output tiles face a long K. :func:`candidates` lists the plans the autotuner times for
one shape (:mod:`.matmul_tune`); :func:`shape_class` names the shapes that share a
tuned plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._core.dtype import DType
from .matmul import MatmulTiles, valid_tiles

__all__ = ["MatmulPlan", "TILES", "CANDIDATE_TILES", "default_plan", "matmul_tiles",
           "candidates", "shape_class", "fits", "slice_len"]

# Schedules of the default choice, largest first. 8x8 blocks per thread (16 vec4
# accumulators) pay off on outputs that give a big GPU a wave of workgroups; smaller
# tiles give more of them.
TILES = (MatmulTiles(128, 128, 8, 8, 8), MatmulTiles(64, 64, 16, 4, 4),
         MatmulTiles(32, 32, 8, 4, 4), MatmulTiles(16, 64, 16, 4, 4),
         MatmulTiles(64, 16, 16, 4, 4))
WAVE = 128  # workgroups that keep a big GPU busy (the H200 has 132 SMs)

# What the autotuner tries: the register-tiled shapes that ran fastest in a standalone
# WGSL SGEMM on an H200 (128x128 tiles of 8x8 per thread, K steps of 8 or 16, 256
# threads; 128x64; 64x128; 64x64), a wide 128x256, and short tiles for few rows.
CANDIDATE_TILES = (
    MatmulTiles(128, 128, 8, 8, 8), MatmulTiles(128, 128, 16, 8, 8),
    MatmulTiles(128, 64, 16, 8, 4), MatmulTiles(64, 128, 16, 8, 8),
    MatmulTiles(64, 64, 16, 8, 8), MatmulTiles(64, 64, 16, 4, 4),
    MatmulTiles(128, 256, 8, 8, 16), MatmulTiles(32, 64, 16, 4, 4),
    MatmulTiles(32, 32, 8, 4, 4), MatmulTiles(16, 64, 16, 4, 4),
    MatmulTiles(64, 16, 16, 4, 4),
)
SPLIT_MIN_K = 4096  # K from which a split pays for its second pass
SPLIT_MIN_SLICE = 512  # K elements each slice takes at least
MAX_SPLIT = 64


@dataclass(frozen=True, slots=True)
class MatmulPlan:
    """A schedule and the number of slices K is split into (1: one kernel with the
    epilogue; more: a partial-sum kernel, then a sum kernel with the epilogue)."""

    tiles: MatmulTiles
    split: int = 1

    def __post_init__(self) -> None:
        assert self.split >= 1

    @property
    def name(self) -> str:
        return self.tiles.name + (f"/k{self.split}" if self.split > 1 else "")

    def to_json(self) -> dict[str, int]:
        t = self.tiles
        return {"tm": t.tm, "tn": t.tn, "tk": t.tk, "rm": t.rm, "rn": t.rn,
                "split": self.split}

    @staticmethod
    def from_json(data: object) -> MatmulPlan | None:
        """The plan ``to_json`` wrote, or None where ``data`` is not one."""
        if not isinstance(data, dict):
            return None
        sizes = [data.get(key) for key in ("tm", "tn", "tk", "rm", "rn", "split")]
        ints = [v for v in sizes if isinstance(v, int) and not isinstance(v, bool)]
        if len(ints) != 6:
            return None
        tm, tn, tk, rm, rn, split = ints
        if split < 1 or not valid_tiles(tm, tn, tk, rm, rn):
            return None
        return MatmulPlan(MatmulTiles(tm, tn, tk, rm, rn), split)


def fits(tiles: MatmulTiles, limits: dict[str, int]) -> bool:
    """Whether the device runs ``tiles``: its threads and double-buffered tiles."""
    return (tiles.threads <= limits["max-compute-invocations-per-workgroup"] and
            tiles.shared_bytes <= limits["max-compute-workgroup-storage-size"])


def slice_len(k: int, split: int, tk: int) -> int:
    """K elements per slice of a ``split``-way split: whole K steps of ``tk``."""
    steps = -(-k // tk)
    return -(-steps // split) * tk


def _tiles_of(batch: int, m: int, n: int, t: MatmulTiles) -> int:
    return batch * -(-m // t.tm) * -(-n // t.tn)


def matmul_tiles(m: int, n: int, limits: dict[str, int], gpu: bool,
                 batch: int = 1) -> MatmulTiles:
    """The schedule without measurements. On a GPU: among the tiles the adapter holds
    (threads, double-buffered workgroup memory) that overhang the output by at most
    twice on each side (:func:`_overhangs`) and make a wave of workgroups, the one that
    pads the output least, then the largest (a 4-row product over a million columns takes
    16x64 tiles, not 128x128 ones that compute 32 rows for every 1 kept); the smallest
    that fits where none makes a wave. On a CPU the 64-tile at most, where fewer, larger
    tiles cost less."""
    held = [t for t in TILES if fits(t, limits)] or [TILES[2]]
    if not gpu:
        for t in held:
            if t.tm <= 64 and min(m, n) >= t.tm and t.tm == t.tn:
                return t
        return TILES[2]
    near = [t for t in held if not _overhangs(t, m, n)]
    wave = [t for t in near if _tiles_of(batch, m, n, t) >= WAVE]
    if wave:
        return min(wave, key=lambda t: (_padded(m, t.tm) * _padded(n, t.tn), -t.tm * t.tn))
    return min(near or held, key=lambda t: (t.tm * t.tn, _padded(m, t.tm) * _padded(n, t.tn)))


def _padded(size: int, tile: int) -> int:
    return -(-size // tile) * tile


def _overhangs(t: MatmulTiles, m: int, n: int) -> bool:
    """Whether ``t`` is more than twice the (power-of-two, at least 16) output on a side."""
    return t.tm > 2 * max(_pow2_at_least(m), 16) or t.tn > 2 * max(_pow2_at_least(n), 16)


def default_plan(batch: int, m: int, n: int, k: int, limits: dict[str, int],
                 gpu: bool) -> MatmulPlan:
    """:func:`matmul_tiles`; on a GPU, where K is long against the output (K >= 4096 and
    at least 4x M and N) and 64-tiles make less than a wave, those tiles with K split
    into enough slices (of 512 or more) for one."""
    mid = TILES[1]
    if gpu and k >= SPLIT_MIN_K and k >= 4 * max(m, n) and fits(mid, limits):
        count = _tiles_of(batch, m, n, mid)
        split = min(-(-WAVE // count), k // SPLIT_MIN_SLICE, MAX_SPLIT)
        if split > 1:
            return MatmulPlan(mid, split)
    return MatmulPlan(matmul_tiles(m, n, limits, gpu, batch))


def _pow2_at_least(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def candidates(batch: int, m: int, n: int, k: int, limits: dict[str, int],
               tiles: tuple[MatmulTiles, ...] | None = None) -> list[MatmulPlan]:
    """The plans worth timing for one shape: each of ``tiles`` (None:
    :data:`CANDIDATE_TILES`) that the device holds, that is at most twice the
    (power-of-two) output it covers, and smaller than 64x64 only where 64x64 tiles make
    less than a wave or a side of the output is shorter than 64; where K is long (>= 4096) and a tile makes less than a wave, that
    tile split in about enough slices for one wave, and for two."""
    out: list[MatmulPlan] = []
    few = _tiles_of(batch, m, n, TILES[1]) < WAVE
    for t in CANDIDATE_TILES if tiles is None else tiles:
        if not fits(t, limits) or _overhangs(t, m, n) or (
                t.tm * t.tn < 64 * 64 and not few and min(m, n) >= 64):
            continue  # small tiles only for few tiles, or for a short side
        out.append(MatmulPlan(t))
        count = _tiles_of(batch, m, n, t)
        if k < SPLIT_MIN_K or count >= WAVE:
            continue
        wave = _pow2_at_least(-(-WAVE // count))
        for split in sorted({min(s, k // SPLIT_MIN_SLICE, MAX_SPLIT) for s in (wave, 2 * wave)}):
            if split > 1:
                out.append(MatmulPlan(t, split))
    return out


def _bucket(n: int, low: int = 1) -> int:
    return max(_pow2_at_least(n), low)


def shape_class(dtype: DType, batch: int, m: int, n: int, k: int,
                layout: MatmulTiles) -> str:
    """The name shared by the shapes one tuned plan serves: the result's dtype, batch,
    M (16 and less together), N and K rounded up to powers of two, and how the operands
    are read (along K or not, as vec4 words or not: ``layout``'s flags)."""
    reads = "".join(("k" if along else "w") + ("4" if vec else "1") for along, vec in
                    ((layout.a_k, layout.a_vec), (layout.b_k, layout.b_vec)))
    return (f"{dtype.label} b{_bucket(batch)} m{_bucket(m, 16)} n{_bucket(n)} "
            f"k{_bucket(k)} {reads}")
