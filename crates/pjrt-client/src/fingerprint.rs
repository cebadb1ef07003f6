//! FarmHash fingerprints, the ones XLA's C++ client derives ids from: `tsl::Fingerprint64` (FarmHash
//! `Fingerprint64`, the "na" variant) of a platform name is its platform id, and
//! `tsl::Fingerprint32` (FarmHash `Fingerprint32`, the "mk" variant) of a memory kind is the kind's
//! id on plugins older than 0.48. Computing the same values makes our ids agree with XLA's.
//!
//! Our own implementation of the published algorithm; `tests` checks it against values computed
//! by Google's FarmHash for inputs of every length class.

const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

fn fetch64(s: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
}

fn fetch32(s: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"))
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

fn hash_len16(u: u64, v: u64, mul: u64) -> u64 {
    let mut a = (u ^ v).wrapping_mul(mul);
    a ^= a >> 47;
    let mut b = (v ^ a).wrapping_mul(mul);
    b ^= b >> 47;
    b.wrapping_mul(mul)
}

fn hash_len0to16(s: &[u8]) -> u64 {
    let len = s.len();
    if len >= 8 {
        let mul = K2.wrapping_add(len as u64 * 2);
        let a = fetch64(s, 0).wrapping_add(K2);
        let b = fetch64(s, len - 8);
        let c = b.rotate_right(37).wrapping_mul(mul).wrapping_add(a);
        let d = a.rotate_right(25).wrapping_add(b).wrapping_mul(mul);
        return hash_len16(c, d, mul);
    }
    if len >= 4 {
        let mul = K2.wrapping_add(len as u64 * 2);
        let a = u64::from(fetch32(s, 0));
        return hash_len16((len as u64).wrapping_add(a << 3), u64::from(fetch32(s, len - 4)), mul);
    }
    if len > 0 {
        let (a, b, c) = (u32::from(s[0]), u32::from(s[len >> 1]), u32::from(s[len - 1]));
        let y = a.wrapping_add(b << 8);
        let z = (len as u32).wrapping_add(c << 2);
        return shift_mix(u64::from(y).wrapping_mul(K2) ^ u64::from(z).wrapping_mul(K0)).wrapping_mul(K2);
    }
    K2
}

fn hash_len17to32(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len as u64 * 2);
    let a = fetch64(s, 0).wrapping_mul(K1);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    hash_len16(
        a.wrapping_add(b).rotate_right(43).wrapping_add(c.rotate_right(30)).wrapping_add(d),
        a.wrapping_add(b.wrapping_add(K2).rotate_right(18)).wrapping_add(c),
        mul,
    )
}

fn hash_len33to64(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len as u64 * 2);
    let a = fetch64(s, 0).wrapping_mul(K2);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    let y = a.wrapping_add(b).rotate_right(43).wrapping_add(c.rotate_right(30)).wrapping_add(d);
    let z = hash_len16(y, a.wrapping_add(b.wrapping_add(K2).rotate_right(18)).wrapping_add(c), mul);
    let e = fetch64(s, 16).wrapping_mul(mul);
    let f = fetch64(s, 24);
    let g = y.wrapping_add(fetch64(s, len - 32)).wrapping_mul(mul);
    let h = z.wrapping_add(fetch64(s, len - 24)).wrapping_mul(mul);
    hash_len16(
        e.wrapping_add(f).rotate_right(43).wrapping_add(g.rotate_right(30)).wrapping_add(h),
        e.wrapping_add(f.wrapping_add(a).rotate_right(18)).wrapping_add(g),
        mul,
    )
}

/// Two 64-bit halves from 32 bytes at `at` and two seeds.
fn weak_hash_len32_with_seeds(s: &[u8], at: usize, mut a: u64, mut b: u64) -> (u64, u64) {
    let (w, x, y, z) = (fetch64(s, at), fetch64(s, at + 8), fetch64(s, at + 16), fetch64(s, at + 24));
    a = a.wrapping_add(w);
    b = b.wrapping_add(a).wrapping_add(z).rotate_right(21);
    let c = a;
    a = a.wrapping_add(x).wrapping_add(y);
    b = b.wrapping_add(a.rotate_right(44));
    (a.wrapping_add(z), b.wrapping_add(c))
}

/// FarmHash `Fingerprint64` (`tsl::Fingerprint64`): stable across platforms and releases.
pub(crate) fn fingerprint64(s: &[u8]) -> u64 {
    let len = s.len();
    if len <= 16 {
        return hash_len0to16(s);
    }
    if len <= 32 {
        return hash_len17to32(s);
    }
    if len <= 64 {
        return hash_len33to64(s);
    }
    const SEED: u64 = 81;
    let mut x = SEED;
    let mut y = SEED.wrapping_mul(K1).wrapping_add(113);
    let mut z = shift_mix(y.wrapping_mul(K2).wrapping_add(113)).wrapping_mul(K2);
    let mut v = (0u64, 0u64);
    let mut w = (0u64, 0u64);
    x = x.wrapping_mul(K2).wrapping_add(fetch64(s, 0));
    // Whole 64-byte blocks, then the last 64 bytes (overlapping the last block).
    let end = (len - 1) / 64 * 64;
    let last64 = end + ((len - 1) & 63) - 63;
    let mut at = 0;
    loop {
        x = x.wrapping_add(y).wrapping_add(v.0).wrapping_add(fetch64(s, at + 8)).rotate_right(37).wrapping_mul(K1);
        y = y.wrapping_add(v.1).wrapping_add(fetch64(s, at + 48)).rotate_right(42).wrapping_mul(K1);
        x ^= w.1;
        y = y.wrapping_add(v.0).wrapping_add(fetch64(s, at + 40));
        z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(K1);
        v = weak_hash_len32_with_seeds(s, at, v.1.wrapping_mul(K1), x.wrapping_add(w.0));
        w = weak_hash_len32_with_seeds(s, at + 32, z.wrapping_add(w.1), y.wrapping_add(fetch64(s, at + 16)));
        std::mem::swap(&mut z, &mut x);
        at += 64;
        if at == end {
            break;
        }
    }
    let mul = K1.wrapping_add((z & 0xff) << 1);
    at = last64;
    w.0 = w.0.wrapping_add(((len - 1) & 63) as u64);
    v.0 = v.0.wrapping_add(w.0);
    w.0 = w.0.wrapping_add(v.0);
    x = x.wrapping_add(y).wrapping_add(v.0).wrapping_add(fetch64(s, at + 8)).rotate_right(37).wrapping_mul(mul);
    y = y.wrapping_add(v.1).wrapping_add(fetch64(s, at + 48)).rotate_right(42).wrapping_mul(mul);
    x ^= w.1.wrapping_mul(9);
    y = y.wrapping_add(v.0.wrapping_mul(9)).wrapping_add(fetch64(s, at + 40));
    z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(mul);
    v = weak_hash_len32_with_seeds(s, at, v.1.wrapping_mul(mul), x.wrapping_add(w.0));
    w = weak_hash_len32_with_seeds(s, at + 32, z.wrapping_add(w.1), y.wrapping_add(fetch64(s, at + 16)));
    std::mem::swap(&mut z, &mut x);
    hash_len16(
        hash_len16(v.0, w.0, mul).wrapping_add(shift_mix(y).wrapping_mul(K0)).wrapping_add(z),
        hash_len16(v.1, w.1, mul).wrapping_add(x),
        mul,
    )
}

fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

fn mur(mut a: u32, mut h: u32) -> u32 {
    a = a.wrapping_mul(C1).rotate_right(17).wrapping_mul(C2);
    h ^= a;
    h.rotate_right(19).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

fn hash32_len0to4(s: &[u8]) -> u32 {
    let (mut b, mut c) = (0u32, 9u32);
    for &byte in s {
        // FarmHash reads these bytes as `signed char`.
        b = b.wrapping_mul(C1).wrapping_add(byte as i8 as u32);
        c ^= b;
    }
    fmix(mur(b, mur(s.len() as u32, c)))
}

fn hash32_len5to12(s: &[u8]) -> u32 {
    let len = s.len() as u32;
    let (mut a, mut b, mut c) = (len, len.wrapping_mul(5), 9u32);
    let d = b;
    a = a.wrapping_add(fetch32(s, 0));
    b = b.wrapping_add(fetch32(s, s.len() - 4));
    c = c.wrapping_add(fetch32(s, (s.len() >> 1) & 4));
    fmix(mur(c, mur(b, mur(a, d))))
}

fn hash32_len13to24(s: &[u8]) -> u32 {
    let n = s.len();
    let mut a = fetch32(s, (n >> 1) - 4);
    let b = fetch32(s, 4);
    let c = fetch32(s, n - 8);
    let d = fetch32(s, n >> 1);
    let e = fetch32(s, 0);
    let f = fetch32(s, n - 4);
    let mut h = d.wrapping_mul(C1).wrapping_add(n as u32);
    a = a.rotate_right(12).wrapping_add(f);
    h = mur(c, h).wrapping_add(a);
    a = a.rotate_right(3).wrapping_add(c);
    h = mur(e, h).wrapping_add(a);
    a = a.wrapping_add(f).rotate_right(12).wrapping_add(d);
    h = mur(b, h).wrapping_add(a);
    fmix(h)
}

/// FarmHash `Fingerprint32` (`tsl::Fingerprint32`): stable across platforms and releases.
pub(crate) fn fingerprint32(s: &[u8]) -> u32 {
    let len = s.len();
    if len <= 4 {
        return hash32_len0to4(s);
    }
    if len <= 12 {
        return hash32_len5to12(s);
    }
    if len <= 24 {
        return hash32_len13to24(s);
    }
    let mut h = len as u32;
    let mut g = C1.wrapping_mul(len as u32);
    let mut f = g;
    let mix = |at: usize| fetch32(s, at).wrapping_mul(C1).rotate_right(17).wrapping_mul(C2);
    let (a0, a1, a2, a3, a4) = (mix(len - 4), mix(len - 8), mix(len - 16), mix(len - 12), mix(len - 20));
    h = (h ^ a0).rotate_right(19).wrapping_mul(5).wrapping_add(0xe654_6b64);
    h = (h ^ a2).rotate_right(19).wrapping_mul(5).wrapping_add(0xe654_6b64);
    g = (g ^ a1).rotate_right(19).wrapping_mul(5).wrapping_add(0xe654_6b64);
    g = (g ^ a3).rotate_right(19).wrapping_mul(5).wrapping_add(0xe654_6b64);
    f = f.wrapping_add(a4).rotate_right(19).wrapping_add(113);
    // 20-byte blocks, at least one.
    for block in 0..(len - 1) / 20 {
        let at = block * 20;
        let (a, b, c, d, e) =
            (fetch32(s, at), fetch32(s, at + 4), fetch32(s, at + 8), fetch32(s, at + 12), fetch32(s, at + 16));
        h = h.wrapping_add(a);
        g = g.wrapping_add(b);
        f = f.wrapping_add(c);
        h = mur(d, h).wrapping_add(e);
        g = mur(c, g).wrapping_add(a);
        f = mur(b.wrapping_add(e.wrapping_mul(C1)), f).wrapping_add(d);
        f = f.wrapping_add(g);
        g = g.wrapping_add(f);
    }
    g = g.rotate_right(11).wrapping_mul(C1).rotate_right(17).wrapping_mul(C1);
    f = f.rotate_right(11).wrapping_mul(C1).rotate_right(17).wrapping_mul(C1);
    h = h.wrapping_add(g).rotate_right(19).wrapping_mul(5).wrapping_add(0xe654_6b64);
    h = h.rotate_right(17).wrapping_mul(C1);
    h = h.wrapping_add(f).rotate_right(19).wrapping_mul(5).wrapping_add(0xe654_6b64);
    h.rotate_right(17).wrapping_mul(C1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(i * 37 + 11) % 256` for i in 0..200: every byte value class, high bits included.
    fn pattern() -> Vec<u8> {
        (0..200u32).map(|i| ((i * 37 + 11) % 256) as u8).collect()
    }

    /// (length of a prefix of `pattern()`, FarmHash Fingerprint64, FarmHash Fingerprint32), as
    /// computed by Google's FarmHash (the `pyfarmhash` 0.5.1 binding).
    const VECTORS: &[(usize, u64, u32)] = &[
        (0, 11160318154034397263, 3696677242),
        (1, 4787810249829893994, 1528084275),
        (2, 12576505597060068467, 152265141),
        (3, 3979540680440595841, 2264012441),
        (4, 14708324829907283305, 1976236200),
        (5, 2571827612821036054, 1789394724),
        (7, 10810953559526984053, 895153619),
        (8, 9029840561075318013, 1702620476),
        (11, 5231381265162878224, 1016242643),
        (12, 1342307080078500921, 424089153),
        (13, 9921769320897687909, 2250069229),
        (16, 15579719139305551062, 1952526956),
        (17, 6692022265393568454, 4037198855),
        (20, 11285650485701139020, 2559860999),
        (24, 12041956627441848363, 3626755563),
        (25, 5096191477763449479, 348316505),
        (31, 5954998855510709538, 2814113835),
        (32, 11543571239247179175, 1298699402),
        (33, 9480451918888261270, 4279514978),
        (40, 17820499859622191999, 4203805896),
        (63, 9004466194475038334, 92087164),
        (64, 4226431515964725, 2378923029),
        (65, 18101669290602532278, 3111675609),
        (100, 669828348884226933, 1851008239),
        (127, 15496381160035339524, 3422593895),
        (128, 3742283891066476345, 3404097909),
        (129, 14054188206783653085, 1271397845),
        (200, 5850749971184008558, 4114505346),
    ];

    #[test]
    fn matches_farmhash_for_every_length_class() {
        let data = pattern();
        for &(len, f64_expected, f32_expected) in VECTORS {
            assert_eq!(fingerprint64(&data[..len]), f64_expected, "Fingerprint64 of {len} bytes");
            assert_eq!(fingerprint32(&data[..len]), f32_expected, "Fingerprint32 of {len} bytes");
        }
    }

    #[test]
    fn platform_ids_and_kind_ids_match_xla() {
        // xla::CpuId(), CudaId(), RocmId(), TpuId() are Fingerprint64 of these names.
        assert_eq!(fingerprint64(b"cpu"), 0xf88d_a91c_978c_8500);
        assert_eq!(fingerprint64(b"cuda"), 0x3ab2_a1e5_3d4a_80a1);
        assert_eq!(fingerprint64(b"rocm"), 0x344f_7353_d6ea_420d);
        assert_eq!(fingerprint64(b"tpu"), 0x83d7_1adb_a779_68aa);
        assert_eq!(fingerprint32(b"device"), 42097224);
        assert_eq!(fingerprint32(b"pinned_host"), 1756073601);
        assert_eq!(fingerprint32(b"unpinned_host") as i32, -272058569);
    }
}
