package sparkbloom.bench

import java.lang.management.ManagementFactory
import java.util.{Collection => JCollection}

import scala.jdk.CollectionConverters._

import org.openjdk.jmh.infra.{BenchmarkParams, IterationParams}
import org.openjdk.jmh.profile.InternalProfiler
import org.openjdk.jmh.results.{AggregationPolicy, IterationResult, Result, ScalarResult}

/**
 * `-prof sparkbloom.bench.CpuTimeProfiler`: how much of each iteration's wall time the benchmark threads
 * were actually on a CPU. On a machine shared with other work the scheduler takes time slices away from
 * the benchmark, and JMH's wall-clock score counts them; this profiler reports alongside it
 *
 *  - `cpu.share`: CPU time of the `jmh-worker` threads / wall time of the iteration (1.0 = never preempted),
 *  - `cpu.time`:  the primary score times that share, i.e. ns/op of on-CPU time.
 *
 * `cpu.time` still includes what preemption costs beyond the lost slice (caches refilled after a switch),
 * so it is an estimate of the quiet-machine score, not a measurement of it.
 */
class CpuTimeProfiler extends InternalProfiler {
  private val threads = ManagementFactory.getThreadMXBean
  private var cpuBefore = Map.empty[Long, Long]
  private var wallBefore = 0L

  def getDescription: String = "CPU time of the benchmark threads against wall time, per iteration"

  private def workerCpu(): Map[Long, Long] =
    Thread.getAllStackTraces.keySet.asScala.iterator
      .filter(_.getName.contains("jmh-worker"))
      .map(t => t.getId -> threads.getThreadCpuTime(t.getId))
      .filter(_._2 >= 0).toMap

  def beforeIteration(bp: BenchmarkParams, ip: IterationParams): Unit = {
    cpuBefore = workerCpu()
    wallBefore = System.nanoTime()
  }

  def afterIteration(bp: BenchmarkParams, ip: IterationParams, ir: IterationResult): JCollection[_ <: Result[_]] = {
    val wall = (System.nanoTime() - wallBefore).toDouble
    val cpu = workerCpu().iterator.map { case (id, ns) => ns - cpuBefore.getOrElse(id, 0L) }.sum.toDouble
    val share = math.min(1.0, cpu / wall / math.max(1, bp.getThreads))
    val score = ir.getPrimaryResult.getScore
    Seq[Result[_]](
      new ScalarResult("cpu.share", share, "", AggregationPolicy.AVG),
      new ScalarResult("cpu.time", score * share, ir.getPrimaryResult.getScoreUnit, AggregationPolicy.AVG)
    ).asJava
  }
}
