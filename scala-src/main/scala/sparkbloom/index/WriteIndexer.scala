package sparkbloom.index

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

import sparkbloom.hash.PlainHash
import sparkbloom.index.sliced.{EntryMeta, Segment, SegmentWriter, SummaryFilter}
import sparkbloom.parquet.{ChunkHasher, Footers}
import sparkbloom.sbbf.{Kernel, Sbbf, Sizing}

/**
 * Indexing inside Spark's own write tasks (maintenance on write). A write task hashes each indexed value of the
 * rows it writes, in the Parquet physical type Spark writes it as, and keeps the hashes of each file in row order.
 * Once the file is closed, its footer gives the row groups' row and null counts, which split the hashes into row
 * groups; each row group gets a filter exactly as a build's scan would make it (distinct values counted, sized by
 * the index's [[FilterSizer]]), and the task's filters go into block-sliced segments with their summaries. The task
 * reports the entries (without bytes) to the driver, which commits them with the previous version's layout: the
 * new files are covered without the table being listed or a written file read again.
 *
 * Anything unexpected about a file (a physical type other than planned, a footer without null counts, hashes
 * that do not add up, too many values to keep) leaves that file out, and the driver then refreshes the index the
 * usual way.
 */
object WriteIndexer {
  /** The Parquet physical type Spark writes a value of `dt` as, for the types a write task hashes itself. */
  def physicalType(dt: DataType): Option[String] = dt match {
    case LongType => Some("INT64")
    case IntegerType | ShortType | ByteType => Some("INT32")
    case _: StringType | BinaryType => Some("BYTE_ARRAY")
    case _ => None
  }

  /** Values of one column a task keeps for one file (8 bytes each) before it leaves the file to a refresh. */
  val MaxValuesPerFile: Int = 16 << 20

  /** What a write task needs of one index (shipped to the tasks). */
  final case class Plan(indexDir: String, dataDirName: String, columns: Array[IndexedColumn], sizer: FilterSizer,
                        shipMaxBytes: Long = ShipMaxBytes)

  /**
   * What a write task reports of one index: temp paths as the task wrote them (the driver maps them). A task that
   * wrote little ships its filters (`shipped`, with their values' hashes) instead of writing segments: the driver
   * stores the shipped filters of all such tasks together ([[storeShipped]]), so that a write of many small tasks
   * (a streaming micro-batch) adds one segment per column, not one per task.
   */
  final case class Part(indexDir: String, entries: Seq[EntryMeta], segments: Seq[Segment],
                        summaries: Seq[SummaryFilter], files: Seq[String], failed: Seq[String],
                        shipped: Seq[FileIndexer.Built] = Nil)

  /** Bytes of filters and hashes a task ships to the driver rather than writing segments itself. */
  val ShipMaxBytes: Long = 1L << 20

  /** The driver's storing of the filters tasks shipped: one writer, full segments and their summaries. */
  def storeShipped(plan: Plan, conf: Configuration, shipped: Seq[FileIndexer.Built])
      : (Seq[EntryMeta], Seq[Segment], Seq[SummaryFilter]) = {
    val writer = new SegmentWriter(new Path(plan.indexDir).getFileSystem(conf), new Path(plan.indexDir),
      plan.dataDirName, DriverPartition, summaryFpp = Some(plan.sizer.summaryFpp _))
    val entries = shipped.map(b => IndexBuilder.entryMeta(b, writer, plan.columns))
    val segments = writer.close()
    (entries, segments, writer.summaries)
  }

  /** The "partition" naming the driver's segments (tasks use their partition ids). */
  private val DriverPartition = 999999

  /** The hashes of one file's values of one column, in row order, nulls left out. */
  final class ColumnHashes(val ordinal: Int, dataType: DataType) {
    private val kind = dataType match {
      case LongType => 0; case IntegerType => 1; case ShortType => 2; case ByteType => 3; case BinaryType => 5
      case _ => 4
    }
    var hashes = new Array[Long](1024)
    var n = 0
    var overflow = false

    def add(row: InternalRow): Unit = if (!row.isNullAt(ordinal) && !overflow) {
      val h = kind match {
        case 0 => PlainHash.int64(row.getLong(ordinal))
        case 1 => PlainHash.int32(row.getInt(ordinal))
        case 2 => PlainHash.int32(row.getShort(ordinal).toInt)
        case 3 => PlainHash.int32(row.getByte(ordinal).toInt)
        case 4 => utf8(row.getUTF8String(ordinal))
        case _ => PlainHash.bytes(row.getBinary(ordinal))
      }
      if (n == hashes.length) {
        if (n >= MaxValuesPerFile) { overflow = true; hashes = null; return }
        hashes = java.util.Arrays.copyOf(hashes, math.min(MaxValuesPerFile, n * 2))
      }
      hashes(n) = h
      n += 1
    }
  }

  /**
   * The hashes of the indexed columns of every row a writer writes, and the rows counted. An error while hashing
   * marks them `failed` (the writer's file is then not indexed) and never reaches the write.
   */
  final class RowHashes(columns: Map[String, ColumnHashes]) {
    private val hashes = columns.values.toArray
    var rows = 0L
    var failed = false

    def add(row: InternalRow): Unit = if (!failed) {
      try {
        var i = 0
        while (i < hashes.length) { hashes(i).add(row); i += 1 }
        rows += 1
      } catch { case NonFatal(_) => failed = true }
    }
  }

  private def utf8(s: UTF8String): Long = s.getBaseObject match {
    case a: Array[Byte] => PlainHash.bytes(a, (s.getBaseOffset - Platform.BYTE_ARRAY_OFFSET).toInt, s.numBytes)
    case _ => PlainHash.bytes(s.getBytes)
  }

  /**
   * One task's indexing of one index: every file it wrote and closed, then [[finish]]. `hashesFor(column)` gives
   * the hashes of a file's column (the index's columns by name; several indexes share them).
   */
  final class TaskIndexer(plan: Plan, conf: Configuration, partition: Int) {
    private val writer = new SegmentWriter(new Path(plan.indexDir).getFileSystem(conf), new Path(plan.indexDir),
      plan.dataDirName, partition, summaryFpp = Some(plan.sizer.summaryFpp _))
    private val entries = mutable.Buffer[EntryMeta]()
    private val files = mutable.Buffer[String]()
    private val failed = mutable.Buffer[String]()
    // filters held to ship to the driver, until they pass ShipMaxBytes: then they go to this task's segments
    private val held = mutable.Buffer[FileIndexer.Built]()
    private var heldBytes = 0L
    private var spilled = false

    def addFile(path: String, hashesFor: String => Option[ColumnHashes]): Unit = {
      val built = try indexFile(path, plan.columns, plan.columns.map(c => hashesFor(c.name)), plan.sizer, conf)
      catch { case NonFatal(_) => None }
      built match {
        case Some(bs) =>
          val bytes = bs.iterator.map(b => 8L * b.nHashes + Option(b.row.getAs[Array[Byte]](17)).fold(0)(_.length)).sum
          if (!spilled && heldBytes + bytes > plan.shipMaxBytes) {
            spilled = true
            entries ++= held.map(b => IndexBuilder.entryMeta(b, writer, plan.columns)); held.clear()
          }
          if (spilled) entries ++= bs.map(b => IndexBuilder.entryMeta(b, writer, plan.columns))
          else {
            // trimmed to their values, as they are shipped
            held ++= bs.map(b =>
              if (b.hashes == null || b.hashes.length == b.nHashes) b
              else b.copy(hashes = java.util.Arrays.copyOf(b.hashes, b.nHashes)))
            heldBytes += bytes
          }
          files += path
        case None => failed += path
      }
    }

    def finish(): Part = {
      val segments = writer.close()
      Part(plan.indexDir, entries.toSeq, segments, writer.summaries, files.toSeq, failed.toSeq, held.toSeq)
    }
  }

  /**
   * The entries of a file just written: its footer read, and its row groups' filters built from `hashes` (aligned
   * with `cols`). None when anything is not as planned.
   */
  def indexFile(path: String, cols: Array[IndexedColumn], hashes: Array[Option[ColumnHashes]], sizer: FilterSizer,
                conf: Configuration): Option[Seq[FileIndexer.Built]] = {
    if (hashes.exists(h => h.isEmpty || h.get.overflow)) return None
    val file = new Path(path)
    val length = file.getFileSystem(conf).getFileStatus(file).getLen
    // from one read of the file's tail: half the time of parquet-java's open
    val footer = Footers.read(conf, file, length).resolving(cols.toSeq.map(_.fileColumn))
    val fileRows = footer.rowGroups.map(_.numRows).sum
    val entriesPerFile = footer.rowGroups.size * cols.length
    val out = mutable.Buffer[FileIndexer.Built]()
    for ((c, ci) <- cols.zipWithIndex) {
      val h = hashes(ci).get
      var pos = 0
      for (rg <- footer.rowGroups.indices) {
        val r = footer.rowGroups(rg)
        val ch = footer.chunk(rg, c.name).getOrElse(return None)
        val enc = ch.encoding.getOrElse(return None)
        if (enc.rebase || h.hashes == null || !physicalType(c.sparkType).contains(enc.physical)) return None
        val nonNull = r.numRows - ch.nullCount.getOrElse(return None)
        if (nonNull < 0 || pos + nonNull > h.n) return None
        // the file's only row group takes the buffer itself (distinct reorders it in place)
        val values =
          if (pos == 0 && nonNull == h.n) h.hashes else java.util.Arrays.copyOfRange(h.hashes, pos, pos + nonNull.toInt)
        pos += nonNull.toInt
        val ndv = ChunkHasher.distinct(values, nonNull.toInt)
        val target = c.ndv.map(cap => math.min(cap, ndv.toLong)).getOrElse(ndv.toLong)
        val fpp = sizer.targetFpp(c.name, target, r.numRows, fileRows)
        val filter = Sbbf.empty(Sizing.indexBytes(target, fpp), Kernel.scalar)
        filter.insertAll(values, 0, ndv)
        val bytes = filter.toBytes
        out += FileIndexer.Built(Row(path, length, 0L, entriesPerFile, rg, r.start, r.end, r.numRows, c.name,
          enc.physical, enc.logical, enc.typeLength, enc.rebase, nonNull < r.numRows, nonNull, ndv.toLong, "scan",
          bytes, IndexStore.crc32(bytes)), if (nonNull == 0) 0f else filter.observedFpp.toFloat, values, ndv)
      }
      if (pos != h.n) return None
    }
    Some(out.toSeq.sortBy(b => (b.row.getInt(4), cols.indexWhere(_.name == b.row.getString(8)))))
  }
}
