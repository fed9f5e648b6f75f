package sparkbloom.scan

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.SeekableInputStream

import sparkbloom.encoding.ValueHasher
import sparkbloom.hash.ColumnEncoding
import sparkbloom.predicate.BloomPredicate
import sparkbloom.predicate.BloomPredicate._
import sparkbloom.parquet.{FileEncodings, FooterInfo, Footers, NativeFilterReader}
import sparkbloom.sbbf.InvalidBloomFilterException

/**
 * Row-group pruning at read time with the bloom filters a file's writer stored (parquet-java, Spark, pyarrow,
 * arrow-rs, DataFusion, DuckDB ...), done safely, in place of parquet-java's own bloom-filter level:
 *
 *  - each filter is validated as [[NativeFilterReader]] validates it for the harvest: an offset or length
 *    outside the file, an unreadable header, a header that disagrees with the stored length or an unknown
 *    algorithm, hash or compression means "no filter" (the row group is kept) and is counted; then only the
 *    32-byte blocks the probed hashes select are read, not the whole bitset;
 *  - literals are encoded in the chunk's own physical type and annotation ([[ValueHasher]]), the same code
 *    the index probes with: floating zero probes both +0.0 and -0.0, NaN and anything that cannot be encoded
 *    exactly (a legacy-calendar file, a cast, a collation, INT96 under `int96TimestampConversion`) keeps it;
 *  - encrypted chunks, columns the file does not have or cannot encode, and `IS NULL` keep the row group
 *    (statistics filtering, which stays Spark's, handles nulls).
 *
 * AND prunes when either side prunes, OR only when both do. Only row groups whose midpoint lies in the split
 * are decided (those are the ones Spark's reader would read from it); the answer is their kept byte ranges,
 * for [[BloomParquetFileFormat.pieces]].
 */
object NativeFilters {

  /**
   * What the file's native filters say about the row groups of one split.
   * @param considered row groups of the split whose filters were consulted
   * @param kept       of those, the ones that may match
   * @param ranges     flattened [start, end) byte ranges of every row group of the file except the pruned ones
   * @param invalid    filters that were present but unusable (corrupt, unsupported), so their row groups were kept
   * @param filtersRead filters read and used
   */
  final case class Decision(considered: Int, kept: Int, ranges: Array[Long], invalid: Int, filtersRead: Int) {
    def pruned: Int = considered - kept
  }

  /**
   * @param caseSensitive `spark.sql.caseSensitive`: match predicate columns to the file's fields exactly;
   *                      otherwise case-insensitively, and only when exactly one field matches
   * @param int96Probes   false under `spark.sql.parquet.int96TimestampConversion` (INT96 values are shifted)
   */
  final case class Options(caseSensitive: Boolean, int96Probes: Boolean, legacyRebaseOfForeignFiles: Boolean = false)
    extends Serializable

  /**
   * The options of a scan in `session` (`readOptions`: the relation's own options, which may set
   * `datetimeRebaseMode` / `int96RebaseMode`). Files written by other writers than Spark are read with the session's
   * (or the read's) rebase modes: under LEGACY their dates and timestamps are shifted on read, so never probed.
   */
  def options(session: org.apache.spark.sql.SparkSession, readOptions: Map[String, String]): Options = {
    def mode(option: String, conf: String): String =
      readOptions.find(_._1.equalsIgnoreCase(option)).map(_._2).getOrElse(session.conf.get(conf, "CORRECTED"))
    val legacy = Seq(mode("datetimeRebaseMode", "spark.sql.parquet.datetimeRebaseModeInRead"),
      mode("int96RebaseMode", "spark.sql.parquet.int96RebaseModeInRead")).exists(_.equalsIgnoreCase("LEGACY"))
    Options(session.sessionState.conf.caseSensitiveAnalysis,
      !session.conf.get("spark.sql.parquet.int96TimestampConversion", "false").toBoolean, legacy)
  }

  /**
   * Decides the split [start, end) of the file at `path` (`fileSize` and `modificationTime` as listed). None:
   * nothing to decide. Footers are kept per executor (keyed by path, size and modification time, softly
   * referenced, at most [[MaxFooters]]), so a repeated lookup reads only the filter blocks it probes.
   */
  def decide(conf: Configuration, path: Path, fileSize: Long, modificationTime: Long, start: Long, end: Long,
             pred: BloomPredicate, opts: Options): Option[Decision] = {
    if (!prunable(pred)) return None
    val key = (path.toString, fileSize, modificationTime)
    val cached = Option(footers.get(key)).flatMap(r => Option(r.get))
    val fs = path.getFileSystem(conf)
    val footer = cached.getOrElse {
      val reader = Footers.open(HadoopInputFile.fromStatus(fs.getFileStatus(path), conf))
      val f = try Footers.fromMetadata(reader.getFooter, fileSize)
      finally reader.close()
      if (footers.size >= MaxFooters) footers.clear()
      footers.put(key, new java.lang.ref.SoftReference(f))
      f
    }
    // The file is opened only if a filter must be read (a file without filters costs no open once its footer
    // is cached).
    var opened: SeekableInputStream = null
    val in = new LazyStream(() => { opened = org.apache.parquet.hadoop.util.HadoopStreams.wrap(fs.open(path)); opened })
    try decide(in, fileSize, footer, start, end, pred, opts)
    finally if (opened != null) opened.close()
  }

  final val MaxFooters = 20000
  private val footers =
    new java.util.concurrent.ConcurrentHashMap[(String, Long, Long), java.lang.ref.SoftReference[FooterInfo]]()

  /** Reads the footer of `path` and decides the split [start, end) (tools and tests). */
  def decide(conf: Configuration, path: Path, start: Long, end: Long, pred: BloomPredicate, opts: Options)
      : Option[Decision] = {
    val st = path.getFileSystem(conf).getFileStatus(path)
    decide(conf, path, st.getLen, st.getModificationTime, start, end, pred, opts)
  }

  /** Decides the split [start, end) of a file whose footer was read; `in` reads the filters. */
  def decide(in: SeekableInputStream, fileLength: Long, footer: FooterInfo, start: Long, end: Long,
             pred: BloomPredicate, opts: Options): Option[Decision] = {
    if (!prunable(pred)) return None
    var considered, kept, invalid, read = 0
    val sparkWritten = Option(footer.keyValueMetadata).exists(_.containsKey(FileEncodings.SparkVersionKey))
    val ranges = Array.newBuilder[Long]
    val hashCache = new java.util.HashMap[(In, ColumnEncoding), Array[Long]]()

    def filterOf(rg: Int, column: String): Option[(NativeFilterReader.Located, ColumnEncoding)] = {
      val name = fieldName(footer, column, opts.caseSensitive)
      name.flatMap(n => footer.chunk(rg, n)).flatMap { c =>
        if (c.encrypted || c.encoding.isEmpty || c.bloomOffset.isEmpty) None
        else if (!opts.int96Probes && c.encoding.get.physical == "INT96") None
        else if (opts.legacyRebaseOfForeignFiles && !sparkWritten && dateTime(c.encoding.get)) None
        else try {
          val f = NativeFilterReader.locate(in, fileLength, c.bloomOffset.get, c.bloomLength)
          read += 1
          Some(f -> c.encoding.get)
        } catch {
          case _: InvalidBloomFilterException => invalid += 1; None
          case NonFatal(_) => invalid += 1; None
        }
      }
    }

    def hashesFor(in: In, enc: ColumnEncoding): Array[Long] = {
      val key = (in, enc)
      if (hashCache.containsKey(key)) hashCache.get(key)
      else {
        val parts = in.values.map(v => ValueHasher.hashes(v, in.dataType, enc))
        val hs = if (parts.exists(_ == null)) null else parts.flatten.distinct.toArray
        hashCache.put(key, hs)
        hs
      }
    }

    def mightMatch(rg: Int, p: BloomPredicate,
                   filters: scala.collection.mutable.Map[String, Option[(NativeFilterReader.Located, ColumnEncoding)]])
        : Boolean = p match {
      case Unknown => true
      case Nothing => false
      case IsNull(_) => true
      case in: In =>
        filters.getOrElseUpdate(in.column, filterOf(rg, in.column)) match {
          case None => true
          case Some((f, enc)) =>
            val hs = hashesFor(in, enc)
            hs == null ||
            (try f.mightContainAny(hs)
            catch {
              case _: InvalidBloomFilterException => invalid += 1; true // a block that cannot be read
            })
        }
      case And(l, r) => mightMatch(rg, l, filters) && mightMatch(rg, r, filters)
      case Or(l, r) => mightMatch(rg, l, filters) || mightMatch(rg, r, filters)
    }

    var rg = 0
    while (rg < footer.rowGroups.length) {
      val r = footer.rowGroups(rg)
      val block = footer.blocks(rg)
      val mid = block.getStartingPos + block.getCompressedSize / 2
      val inSplit = mid >= start && mid < end
      val keep = !inSplit || {
        considered += 1
        val m = mightMatch(rg, pred, scala.collection.mutable.Map.empty)
        if (m) kept += 1
        m
      }
      if (keep) { ranges += r.start; ranges += r.end }
      rg += 1
    }
    Some(Decision(considered, kept, ranges.result(), invalid, read))
  }

  private def dateTime(e: ColumnEncoding): Boolean =
    e.physical == "INT96" || e.logical == "DATE" || e.logical.startsWith("TIMESTAMP")

  /** Whether `p` could ever prune a row group through equality filters (else no file is opened). */
  def prunable(p: BloomPredicate): Boolean = p match {
    case Unknown | IsNull(_) => false
    case Nothing | In(_, _, _) => true
    case And(l, r) => prunable(l) || prunable(r)
    case Or(l, r) => prunable(l) && prunable(r)
  }

  private def fieldName(f: FooterInfo, column: String, caseSensitive: Boolean): Option[String] = {
    if (caseSensitive) { if (f.schema.containsField(column)) Some(column) else None }
    else {
      import scala.jdk.CollectionConverters._
      val names = f.schema.getFields.asScala.map(_.getName)
      // Spark's reader fails on a name two fields match case-insensitively: never decide on it (the error must
      // still be raised by reading).
      val ci = names.filter(_.equalsIgnoreCase(column))
      if (ci.size == 1) ci.headOption else None
    }
  }

  /** Kept ranges of `a` that are also in `b` (both flattened [start, end) pairs over the same row groups). */
  def intersect(a: Array[Long], b: Array[Long]): Array[Long] = {
    val out = Array.newBuilder[Long]
    var i = 0
    while (i < a.length) {
      var j = 0
      while (j < b.length) {
        val lo = math.max(a(i), b(j)); val hi = math.min(a(i + 1), b(j + 1))
        if (lo < hi) { out += lo; out += hi }
        j += 2
      }
      i += 2
    }
    out.result()
  }
}

/** A stream opened on first use (only seek/readFully/getPos are used by the filter reader). */
private[scan] final class LazyStream(open: () => SeekableInputStream) extends SeekableInputStream {
  private lazy val in = open()
  override def getPos: Long = in.getPos
  override def seek(newPos: Long): Unit = in.seek(newPos)
  override def readFully(bytes: Array[Byte]): Unit = in.readFully(bytes)
  override def readFully(bytes: Array[Byte], start: Int, len: Int): Unit = in.readFully(bytes, start, len)
  override def read(buf: java.nio.ByteBuffer): Int = in.read(buf)
  override def readFully(buf: java.nio.ByteBuffer): Unit = in.readFully(buf)
  override def read(): Int = in.read()
  override def close(): Unit = ()
}
