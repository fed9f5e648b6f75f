package sparkbloom.index.sliced

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.SparkSession

import sparkbloom.index.{IndexVersion, SerializableConf}
import sparkbloom.index.sliced.SlicedProbe.{Prober, Request}
import sparkbloom.sbbf.Kernel

/**
 * Where a version's probes run. On the driver, runs come from [[IndexCache]] and positioned reads (or from
 * memory for a format-1 version); a lookup whose uncached runs would not fit the cache
 * (`spark.sparkbloom.cache.maxBytes`) runs as a Spark job instead, one task per segment file with the hashes
 * shipped in the task, so the driver never holds more than the cache.
 */
object Probers {
  /** Bytes of the runs a probe reads, and how many of them came from storage (for metrics). */
  final class Counters { @volatile var bytesRead = 0L; @volatile var distributed = false }

  /** The probe of version `v`'s row groups: its segments through [[forVersion]], its summaries on the driver. */
  def sliced(spark: SparkSession, v: IndexVersion, counters: Counters, int96Probes: Boolean = true): SlicedProbe =
    new SlicedProbe(v.layout, forVersion(spark, v, counters), int96Probes, summaries(spark, v, counters))

  /**
   * The runs of summary segments, from [[IndexCache]] or one positioned read each (a point lookup reads one
   * run of 32 bytes per segment of the column: R / 2048 of them); a damaged summary file gives no runs.
   */
  def summaries(spark: SparkSession, v: IndexVersion, counters: Counters): SlicedProbe.RunFetcher = {
    lazy val fs = RunReader.withoutChecksumFiles(v.dir.getFileSystem(spark.sessionState.newHadoopConf()))
    (seg, blocks) =>
      if (v.damaged.contains(seg.file)) SlicedProbe.NoRuns(seg, blocks)
      else {
        counters.bytesRead +=
          blocks.count(b => !IndexCache.contains(IndexCache.runKey(v.dir, seg, b))).toLong * seg.runBytes
        IndexCache.runs(fs, v.dir, seg, blocks)
      }
  }

  def forVersion(spark: SparkSession, v: IndexVersion, counters: Counters): Prober = {
    val fs = RunReader.withoutChecksumFiles(v.dir.getFileSystem(spark.sessionState.newHadoopConf()))
    requests => {
      val uncached = requests.iterator.filterNot(r => v.memorySegments.contains(r.segment.file)).map { r =>
        blocksOf(r).count(b => !IndexCache.contains(IndexCache.runKey(v.dir, r.segment, b))).toLong * r.segment.runBytes
      }.sum
      counters.bytesRead += uncached
      if (uncached > IndexCache.limit) { counters.distributed = true; distributed(spark, v, requests) }
      else local(fs, v, requests)
    }
  }

  private def blocksOf(r: Request): Seq[Int] =
    SlicedProbe.distinct(r.hashes.map(h => Kernel.blockIndex(h, r.segment.blocks).toLong)).map(_.toInt).toSeq

  /** Positioned reads of different segments in parallel (cold lookups; object stores answer in parallel). */
  private lazy val ioPool: scala.concurrent.ExecutionContext = {
    val n = new java.util.concurrent.atomic.AtomicInteger()
    scala.concurrent.ExecutionContext.fromExecutorService(java.util.concurrent.Executors.newFixedThreadPool(16,
      (r: Runnable) => {
        val t = new Thread(r, s"sparkbloom-index-io-${n.incrementAndGet()}"); t.setDaemon(true); t
      }))
  }

  private def local(fs: FileSystem, v: IndexVersion, requests: Seq[Request]): Map[Int, Option[Array[Long]]] = {
    val uncached = requests.count(r =>
      !v.memorySegments.contains(r.segment.file) &&
        blocksOf(r).exists(b => !IndexCache.contains(IndexCache.runKey(v.dir, r.segment, b))))
    if (uncached < 4) localSerial(fs, v, requests)
    else {
      import scala.concurrent.{Await, Future}
      implicit val ec: scala.concurrent.ExecutionContext = ioPool
      val parts = requests.grouped(math.max(1, (requests.size + 15) / 16)).map(g => Future(localSerial(fs, v, g))).toSeq
      parts.map(Await.result(_, scala.concurrent.duration.Duration.Inf)).reduce(_ ++ _)
    }
  }

  private def localSerial(fs: FileSystem, v: IndexVersion, requests: Seq[Request]): Map[Int, Option[Array[Long]]] =
    requests.map { r =>
      if (v.damaged.contains(r.segment.file)) r.segmentIndex -> None
      else r.segmentIndex -> SlicedProbe.probeRuns(r.segment, r.hashes,
        blocks =>
          v.memorySegments.get(r.segment.file) match {
            case Some(bytes) => blocks.map(b =>
                b -> Some(java.util.Arrays.copyOfRange(bytes,
                  r.segment.runOffset(b).toInt, r.segment.runOffset(b).toInt + r.segment.runBytes))).toMap
            case None => IndexCache.runs(fs, v.dir, r.segment, blocks)
          })
    }.toMap

  private def distributed(spark: SparkSession, v: IndexVersion, requests: Seq[Request])
      : Map[Int, Option[Array[Long]]] = {
    val (memory, stored) =
      requests.partition(r => v.memorySegments.contains(r.segment.file) || v.damaged.contains(r.segment.file))
    val sc = spark.sparkContext
    val conf = new SerializableConf(spark.sessionState.newHadoopConf())
    val dir = v.dir.toString
    sc.setJobDescription(s"sparkbloom: probe ${stored.size} segments of ${v.meta.name}")
    val remote = try sc.parallelize(stored, math.max(1, stored.size)).map { r =>
        val fs = new Path(dir).getFileSystem(conf.value)
        r.segmentIndex -> SlicedProbe.probeRuns(r.segment, r.hashes,
          blocks => RunReader.read(fs, new Path(dir, r.segment.file), r.segment, blocks))
      }.collect().toMap
    finally sc.setJobDescription(null)
    remote ++ local(null, v, memory)
  }
}
