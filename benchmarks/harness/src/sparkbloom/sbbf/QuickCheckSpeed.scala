package sparkbloom.sbbf

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter

/**
 * A quick, unscientific measurement (the real benchmark is the JMH project): 1M probes against a 1 MiB
 * filter holding 100k values, half of the probes present, with our batch check on each kernel and with
 * parquet-java's findHash in a loop. Prints the median of several rounds; asserts nothing.
 *
 *   dev/sbt "harness/runMain sparkbloom.sbbf.QuickCheckSpeed"
 */
object QuickCheckSpeed {
  def main(args: Array[String]): Unit = {
    val numBytes = 1 << 20
    val rnd = new java.util.SplittableRandom(1)
    val inserted = Array.fill(100000)(rnd.nextLong())
    val probes =
      Array.tabulate(1000000)(i => if (i % 2 == 0) inserted(rnd.nextInt(inserted.length)) else rnd.nextLong())

    val theirs = new BlockSplitBloomFilter(numBytes, numBytes)
    inserted.foreach(theirs.insertHash)
    val kernels = Seq(Kernel.scalar) ++ Kernel.vector
    val ours = kernels.map { k =>
      val f = Sbbf.empty(numBytes, k); f.insertAll(inserted); f
    }

    val out = new Array[Boolean](probes.length)
    def time(rounds: Int)(body: => Int): (Double, Int) = {
      val ns = (0 until rounds).map { _ =>
        val t = System.nanoTime(); val hits = body; (System.nanoTime() - t, hits)
      }
      val sorted = ns.map(_._1).sorted
      (sorted(sorted.length / 2).toDouble / probes.length, ns.head._2)
    }
    def ourCheck(f: Sbbf): Int = {
      f.mightContainAll(probes, out); var c = 0; var i = 0; while (i < out.length) { if (out(i)) c += 1; i += 1 }; c
    }
    def theirCheck(): Int = {
      var c = 0; var i = 0; while (i < probes.length) { if (theirs.findHash(probes(i))) c += 1; i += 1 }; c
    }

    // Warm up every path so the JIT compiles them before measuring.
    for (_ <- 0 until 20) { ours.foreach(ourCheck); theirCheck() }
    println(s"1M probes (50% present) against a ${numBytes >> 20} MiB filter of ${inserted.length} values, " +
      s"Java ${System.getProperty("java.version")}, ${Runtime.getRuntime.availableProcessors()} cores")
    val results = ours.map(f => s"sparkbloom mightContainAll (${f.kernelName})" -> time(15)(ourCheck(f))) :+
      ("parquet-java findHash loop" -> time(15)(theirCheck()))
    val hits = results.map(_._2._2).distinct
    require(hits.size == 1, s"implementations disagree: $results")
    results.foreach { case (name, (nsPerProbe, _)) =>
      println(f"  $name%-42s $nsPerProbe%6.2f ns/probe  ${1000 / nsPerProbe}%7.1f M probes/s")
    }
    println(s"  hits: ${hits.head}")
  }
}
