package sparkbloom.sbbf

import org.scalatest.funsuite.AnyFunSuite

import Sizing._

/** Sizing: the spec/arrow-rs table, other writers' sizes, and the Putze FPP model (vectors.md §4). */
class SizingSuite extends AnyFunSuite {

  // spec/000 (arrow-rs module docs): NDV, FPP, blocks, size in KB.
  private val specTable = Seq(
    (10000L, 0.1, 256, 8), (10000L, 0.01, 512, 16), (10000L, 0.001, 1024, 32), (10000L, 0.0001, 1024, 32),
    (100000L, 0.1, 4096, 128), (100000L, 0.01, 4096, 128), (100000L, 0.001, 8192, 256),
    (100000L, 0.0001, 16384, 512), (100000L, 0.00001, 16384, 512),
    (1000000L, 0.1, 32768, 1024), (1000000L, 0.01, 65536, 2048), (1000000L, 0.001, 65536, 2048),
    (1000000L, 0.0001, 131072, 4096), (1000000L, 0.00001, 131072, 4096), (1000000L, 0.000001, 262144, 8192))

  test("numBytes reproduces every row of the spec's NDV/FPP size table") {
    for ((ndv, fpp, blocks, kb) <- specTable) {
      val n = Sizing.numBytes(ndv, fpp)
      assert(n / Sbbf.BytesPerBlock == blocks, s"ndv $ndv fpp $fpp")
      assert(n / 1024 == kb, s"ndv $ndv fpp $fpp")
    }
  }

  test("bitsFor reproduces arrow-rs's num_of_bits_from_ndv_fpp, truncated") {
    val rows = Seq((0.1, 10L, 57L), (0.01, 10L, 96L), (0.001, 10L, 146L), (0.1, 100L, 577L), (0.01, 100L, 968L),
      (0.001, 100L, 1460L), (0.1, 1000L, 5772L), (0.01, 1000L, 9681L), (0.001, 1000L, 14607L),
      (0.1, 10000L, 57725L), (0.01, 10000L, 96815L), (0.001, 10000L, 146076L), (0.1, 100000L, 577254L),
      (0.01, 100000L, 968152L), (0.001, 100000L, 1460769L), (0.1, 1000000L, 5772541L),
      (0.01, 1000000L, 9681526L), (0.001, 1000000L, 14607697L))
    for ((fpp, ndv, bits) <- rows) assert(Sizing.bitsFor(ndv, fpp).toLong == bits, s"fpp $fpp ndv $ndv")
    assert(new java.math.BigDecimal(Sizing.bitsFor(1000000000000L, 1e-50)).toBigInteger.toString ==
      "14226231280773240832")
  }

  test("numBytes agrees with Arrow C++'s OptimalNumOfBits (next power of two, 32 B to 128 MiB)") {
    val rows = Seq((256L, 0.01, 4096L), (512L, 0.01, 8192L), (1024L, 0.01, 16384L), (2048L, 0.01, 32768L),
      (200L, 0.01, 2048L), (200L, 0.025, 2048L), (200L, 0.05, 2048L), (300L, 0.01, 4096L), (700L, 0.01, 8192L),
      (1500L, 0.01, 16384L), (4L, 0.01, 256L), (4L, 0.25, 256L),
      (4294967295L, 0.01, 128L * 1024 * 1024 * 8), (4294967295L, 0.25, 128L * 1024 * 1024 * 8))
    for ((ndv, fpp, bits) <- rows) assert(Sizing.numBytes(ndv, fpp).toLong * 8 == bits, s"ndv $ndv fpp $fpp")
  }

  test("numBytes agrees with parquet-java (NDV 10000 at 1% is 16384 bytes) and DuckDB (100 values)") {
    assert(Sizing.numBytes(10000, 0.01) == 16384)
    // DuckDB bloom_filter_length = 16-byte header + bitset: 144, 80, 272, 528.
    val duckdb = Seq(0.01 -> 128, 0.5 -> 64, 0.001 -> 256, 0.0001 -> 512)
    for ((fpp, bytes) <- duckdb) assert(Sizing.numBytes(100, fpp) == bytes, s"fpp $fpp")
  }

  test("sizes are clamped to [32 B, 128 MiB] and are powers of two") {
    assert(Sizing.numBytes(0, 0.01) == 32)
    assert(Sizing.numBytes(1, 0.5) == 32)
    assert(Sizing.numBytes(Long.MaxValue, 0.01) == Sbbf.MaxBytes)
    assert(Sizing.numBytes(1000000000000L, 1e-50) == Sbbf.MaxBytes)
    val rnd = new scala.util.Random(5)
    for (_ <- 0 until 1000) {
      val n = Sizing.numBytes(rnd.nextInt(Int.MaxValue).toLong, 1e-6 + rnd.nextDouble() * 0.99)
      assert(n >= 32 && n <= Sbbf.MaxBytes && Integer.bitCount(n) == 1, s"$n")
    }
  }

  test("numBytes grows with ndv and with a smaller fpp") {
    val ndvs = Seq(1L, 10L, 100L, 1000L, 10000L, 100000L, 1000000L, 10000000L)
    assert(ndvs.map(Sizing.numBytes(_, 0.01)).sliding(2).forall { case Seq(a, b) => a <= b })
    val fpps = Seq(0.5, 0.1, 0.01, 0.001, 0.0001)
    assert(fpps.map(Sizing.numBytes(50000, _)).sliding(2).forall { case Seq(a, b) => a <= b })
  }

  test("fpp outside (0, 1) and negative ndv are refused") {
    for (f <- Seq(0.0, 1.0, -0.1, 1.5, Double.NaN)) intercept[IllegalArgumentException](Sizing.numBytes(10, f))
    intercept[IllegalArgumentException](Sizing.numBytes(-1, 0.01))
  }

  // The spec's table gives one decimal of bits per insert for an FPP it calls "around"; the model puts each
  // row's FPP within 1.5% of the spec's and each bits-per-value within 0.1 bit (26.34 for 0.01%, spec 26.4).
  private val bitsPerInsertTable = Seq(6.0 -> 0.1, 10.5 -> 0.01, 16.9 -> 0.001, 26.4 -> 0.0001, 41.0 -> 0.00001)

  test("the Putze estimate gives the spec's FPP for each row of the bits-per-insert table") {
    for ((bits, fpp) <- bitsPerInsertTable) {
      val blocks = 1000000L
      val n = (blocks * 256 / bits).toLong
      val est = Sizing.fpp(blocks * 32, n)
      assert(math.abs(est / fpp - 1) < 0.015, s"$bits bits per insert: estimate $est, spec $fpp")
    }
  }

  test("bitsPerValue inverts the estimate to the spec's bits-per-insert table") {
    for ((bits, fpp) <- bitsPerInsertTable) {
      val got = Sizing.bitsPerValue(fpp)
      val tolerance = if (bits == 41.0) 0.5 else 0.1 // 41 is given without a decimal
      assert(math.abs(got - bits) <= tolerance, s"fpp $fpp: $got bits per value, spec says $bits")
      assert(math.abs(Sizing.fpp(1L << 30, ((1L << 33) / got).toLong) - fpp) < 0.001 * fpp, s"round trip at $fpp")
    }
  }

  test("the Putze estimate reproduces the spec's worked example of 1024 blocks") {
    val bytes = 1024L * 32
    assert(math.abs(Sizing.fpp(bytes, 26214) - 0.0126) < 0.0001, s"${Sizing.fpp(bytes, 26214)}")
    assert(math.abs(Sizing.fpp(bytes, 52428) - 0.18) < 0.005, s"${Sizing.fpp(bytes, 52428)}")
    assert(math.abs(Sizing.fpp(bytes, 13107) - 0.0004) < 0.00005, s"${Sizing.fpp(bytes, 13107)}")
  }

  test("the estimate is 0 for an empty filter, grows with n and depends only on values per block") {
    assert(Sizing.fpp(1024, 0) == 0.0)
    val ns = Seq(1L, 10L, 100L, 1000L, 10000L)
    assert(ns.map(Sizing.fpp(4096, _)).sliding(2).forall { case Seq(a, b) => a < b })
    assert(math.abs(Sizing.fpp(4096, 1000) - Sizing.fpp(8192, 2000)) < 1e-12)
    assert(Sizing.fpp(32, 100000) <= 1.0 && Sizing.fpp(32, 100000) > 0.99)
  }

  test("block counts round up to {4..7}·2^k: at most 1.25× the exact size, never fewer blocks") {
    for (b <- (1L to 5000L) ++ Seq(1L << 22, (1L << 22) - 1, 123456789L)) {
      val g = roundUpToGrid(b)
      assert(g >= b && g <= math.max(b * 1.25, b + 0.0), s"$b -> $g")
      val shift = math.max(0, 63 - java.lang.Long.numberOfLeadingZeros(g) - 2)
      assert(g < 8 ||
          ((g >>> shift) >= 4 && (g >>> shift) <= 7 && (g & ((1L << shift) - 1)) == 0), s"$b -> $g off the grid")
    }
    assert((1L to 1000000L).map(roundUpToGrid).distinct.size < 4 * 20 + 8)
  }

  test("filter sizes from the FPP grid always meet the row group's target") {
    for (p <- Seq(0.5, 0.3, 0.1, 0.0123, 1e-3, 3.3e-4, 1e-5, 2.2e-7); n <- Seq(1L, 37L, 1000L, 123457L)) {
      val bytes = indexBytes(n, p)
      assert(fpp(bytes, n) <= p * 1.0000001, s"p=$p n=$n bytes=$bytes fpp=${fpp(bytes, n)}")
      assert(indexBitsPerValue(p) <= bitsPerValue(p) * 1.02, s"p=$p") // the grid costs < 2% bits
    }
  }

  test("every filter size is whole blocks between 32 B and 128 MiB, spec table or index grid alike") {
    val rnd = new scala.util.Random(11)
    for (_ <- 1 to 2000) {
      val n = (math.pow(10, rnd.nextDouble() * 9)).toLong
      val p = math.pow(10, -rnd.nextDouble() * 8) * 0.99
      for ((what, bytes) <- Seq("numBytes" -> numBytes(n, p), "indexBytes" -> indexBytes(n, p))) {
        assert(bytes % Sbbf.BytesPerBlock == 0 && bytes >= Sbbf.MinBytes && bytes <= Sbbf.MaxBytes,
          s"$what($n, $p) = $bytes")
      }
      // The index's filter is the smallest on its grid meeting the target: at most 1.25x the exact Putze size
      // (filters of fewer than 8 blocks are exact already).
      val exactBlocks = math.max(1L, math.ceil(n * indexBitsPerValue(p) / 256.0).toLong)
      assert(indexBytes(n, p) <= math.min(Sbbf.MaxBytes.toLong, math.max(exactBlocks * 32 * 5 / 4, 32L * 7)),
        s"indexBytes($n, $p)")
    }
  }
}
