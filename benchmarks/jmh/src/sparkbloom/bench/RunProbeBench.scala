package sparkbloom.bench

import java.util.SplittableRandom
import java.util.concurrent.TimeUnit

import org.openjdk.jmh.annotations._

import sparkbloom.sbbf.{Kernel, RunProbe, Sbbf}

/**
 * M = 1,024 filters of `blocks` blocks each, filled to 10.5 bits per value, stored two ways: as the
 * filters themselves (today: one `Sbbf` per row group) and block-sliced (`blocks` runs of
 * M x 32 bytes, back to back in one array). `blocks` = 1 is one 32 KiB run, in L1; `blocks` = 8192 is
 * 8,192 runs, 256 MiB (256 KiB per filter), so a random value's run is in DRAM or, at best, the shared L3.
 */
@State(Scope.Benchmark)
class SlicedFilters {
  @Param(Array("vector", "scalar", "perFilter")) var impl: String = _
  @Param(Array("1", "8192")) var blocks: Int = _
  var filters: Array[Sbbf] = _
  var runs: Array[Byte] = _
  var probe: RunProbe = _
  val hashes: Array[Long] = Workload.randomHashes(RunProbeBench.Hashes, Workload.Seed + 40)
  val out = new Array[Long](RunProbe.bitmapWords(RunProbeBench.M))
  var next = 0

  @Setup(Level.Trial) def setup(): Unit = {
    import RunProbeBench.M
    val rnd = new SplittableRandom(Workload.Seed + 41)
    val perFilter = Workload.valuesFor(blocks * 32)
    val fs = Workload.timed(s"fill $M filters of $blocks blocks with $perFilter random hashes each") {
      val chunk = new Array[Long](perFilter)
      Array.fill(M) {
        val f = Sbbf.empty(blocks * 32, Workload.kernel(Workload.Vector))
        var i = 0; while (i < perFilter) { chunk(i) = rnd.nextLong(); i += 1 }
        f.insertAll(chunk); f
      }
    }
    val sliced = Workload.timed(s"slice them into $blocks runs of ${M * 32} bytes") {
      val a = new Array[Byte](blocks * M * 32)
      var b = 0; while (b < blocks) { RunProbe.sliceRun(fs, b, a, b * M * 32); b += 1 }
      a
    }
    // Both probes must give, for every hash measured, exactly the per-filter answers.
    Workload.timed(s"compare both run probes with the per-filter checks for ${hashes.length} hashes") {
      val probes =
        Seq(RunProbe.scalar, RunProbe.vector.getOrElse(throw new IllegalStateException("no vector run probe")))
      var passed = 0L
      for (h <- hashes) {
        val expected = fs.map(_.mightContain(h))
        passed += expected.count(identity)
        for (p <- probes) {
          val o = new Array[Long](out.length)
          p.probeRun(sliced, Kernel.blockIndex(h, blocks) * M * 32, M, h, o)
          var j = 0
          while (j < M) {
            Workload.check(((o(j >>> 6) >>> j) & 1L) == (if (expected(j)) 1L else 0L), s"${p.name}: filter $j, hash $h")
            j += 1
          }
        }
      }
      println(f"[setup] blocks passing: ${100.0 * passed / (hashes.length.toLong * M)}%.2f%%")
    }
    impl match {
      case "perFilter" => filters = fs
      case Workload.Vector => runs = sliced; probe = RunProbe.vector.get
      case Workload.Scalar => runs = sliced; probe = RunProbe.scalar
    }
  }
}

/**
 * One value against M = 1,024 filters of the same block count, ns per filter (= per 32-byte block): the
 * vector and scalar run probes on block-sliced storage, and today's per-filter probe (`Sbbf.mightContain`
 * on each of the M filters, vector kernel), both writing one bit per filter. Each invocation takes the
 * next of 4,096 random hashes, so at `blocks` = 8192 it reads a different, random run every time.
 */
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(2) @Warmup(iterations = 3, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
class RunProbeBench {
  @Benchmark @OperationsPerInvocation(RunProbeBench.M)
  def probeOneValue(s: SlicedFilters): Array[Long] = {
    val h = s.hashes(s.next)
    s.next = (s.next + 1) & (RunProbeBench.Hashes - 1)
    val out = s.out
    java.util.Arrays.fill(out, 0L)
    if (s.filters ne null) {
      val fs = s.filters; var j = 0
      while (j < fs.length) { out(j >>> 6) |= (if (fs(j).mightContain(h)) 1L else 0L) << j; j += 1 }
    } else {
      s.probe.probeRun(s.runs, Kernel.blockIndex(h, s.blocks) * RunProbeBench.M * 32, RunProbeBench.M, h, out)
    }
    out
  }
}

object RunProbeBench {
  final val M = 1024
  final val Hashes = 4096
}
