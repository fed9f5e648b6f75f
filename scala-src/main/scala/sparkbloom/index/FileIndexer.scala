package sparkbloom.index

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.column.ColumnDescriptor
import org.apache.parquet.column.page.DictionaryPageReadStore
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.SeekableInputStream
import org.apache.parquet.schema.MessageType
import org.apache.spark.SparkException
import org.apache.spark.sql.Row
import org.apache.spark.util.{CollectionAccumulator, LongAccumulator}

import sparkbloom.hash.ColumnEncoding
import sparkbloom.parquet.{ChunkHasher, Footers, FooterInfo, NativeFilterReader}
import sparkbloom.sbbf.{InvalidBloomFilterException, Kernel, Sbbf, Sizing}

/**
 * One data file indexed inside a build task: its footer read, a valid native bloom filter taken where a column
 * chunk has one (harvest), otherwise the indexed columns' pages read and their values hashed in the file's own
 * physical type, each filter sized from the chunk's actual distinct count and its row group's FPP.
 */
private[index] object FileIndexer {
  /** Marks a task failure that is a user error (encrypted data): the driver rethrows it as one. */
  val EncryptedPrefix = "sparkbloom-encrypted: "

  /** Bytes of a file's filters a harvest reads in one read (more are read filter by filter). */
  val HarvestPrefetchMax: Int = 4 << 20

  def indexFile(f: DataFile, cols: Array[IndexedColumn], harvest: Boolean, sizer: FilterSizer,
                conf: Configuration, acc: Map[String, LongAccumulator], skipped: CollectionAccumulator[String],
                fastPaths: Boolean, counted: Array[String], counts: Array[Long],
                deferScans: Boolean): Option[Seq[FileIndexer.Built]] = {
    val path = new Path(f.path)
    // The sizing job just read this footer in this JVM (same path, size and mtime as listed): reuse it.
    val handed = Footers.take(f.path, f.size, f.mtime)
    // Otherwise, for a harvest, the footer and the bytes before it (where parquet-java writes the filters) in one
    // read; a file that does not allow it (encrypted, changed since listed, ...) is opened through parquet-java
    // below, as is every file of a build that scans (its reader reads the footer with the pages).
    val tail = if (handed.isEmpty && harvest) Footers.readTail(conf, path, f.size) else None
    // The file's reader, opened only to read pages (or the footer, when the tail read did not apply).
    var reader: ParquetFileReader = null
    // One stream per file for every native filter harvested from it.
    var harvestIn: SeekableInputStream = tail.map(_._2).orNull
    val (metadata, fileLength, input) = tail match {
      case Some((md, _)) => (md, f.size, None)
      case None =>
        val input = HadoopInputFile.fromPath(path, conf)
        reader = try handed.filter(_ => input.getLength == f.size).map(md => Footers.open(conf, path, md))
            .getOrElse(Footers.open(input))
        catch {
          case e: Exception if isCrypto(e) =>
            throw new SparkException(s"${EncryptedPrefix}cannot index ${f.path}: its footer is encrypted and " +
              "sparkbloom does not copy membership of encrypted data into an unencrypted index")
          case NonFatal(e) =>
            skipped.add(s"${f.path}: not a readable Parquet file (${e.getMessage})"); return Some(Nil)
        }
        (reader.getFooter, input.getLength, Some(input))
    }
    val harvestStream = () => { if (harvestIn == null) harvestIn = input.get.newStream(); harvestIn }
    try {
      val footer = Footers.fromMetadata(metadata, fileLength).resolving(cols.toSeq.map(_.fileColumn))
      SizingJobs.addValueCounts(footer, counted, counts)
      val chunks = for (rg <- footer.rowGroups.indices; c <- cols; ch <- footer.chunk(rg, c.name)) yield (c, ch)
      for ((c, _) <- chunks.find(_._2.encrypted))
        throw new SparkException(s"${EncryptedPrefix}cannot index column ${c.name}: it is encrypted in ${f.path}; " +
          "sparkbloom does not copy membership of encrypted values into an unencrypted index")
      val out = mutable.Buffer[Built]()
      val entriesPerFile = footer.rowGroups.size * cols.length
      // Decide per chunk: harvest, scan, or "no filter". Scans need the pages, read row group by row group.
      val toScan = mutable.Map[(Int, String), ColumnPlan]()
      // The filters to harvest lie together before the footer (parquet-java): read them in one read.
      if (tail.isDefined) {
        val offsets = chunks.flatMap(_._2.bloomOffset)
        if (offsets.nonEmpty) tail.get._2.prefetchFrom(offsets.min, HarvestPrefetchMax)
      }
      val plans = for (rg <- footer.rowGroups.indices; c <- cols) yield {
        val p = plan(f, footer, rg, c, harvest, harvestStream, acc)
        if (p.scan) toScan((rg, c.name)) = p
        (rg, c, p)
      }
      if (toScan.nonEmpty && deferScans) {
        // Scans wait for the table's value counts; the next job takes this footer from here.
        if (fileLength == f.size) Footers.remember(f.path, f.size, f.mtime, footer.metadata)
        return None
      }
      acc("harvested").add(plans.count(_._3.source == "harvest"))
      if (toScan.nonEmpty) {
        if (reader == null) reader = Footers.open(conf, path, metadata)
        scanChunks(reader, footer, toScan, cols, sizer, acc, fastPaths)
      }
      for ((rg, c, p) <- plans) {
        val r = footer.rowGroups(rg)
        val bytes = if (p.filter == null) null else p.filter.toBytes
        if (bytes != null) acc("bytes").add(bytes.length)
        acc("entries").add(1)
        val observedFpp = if (p.filter == null || p.nonNull == 0) 0f else p.filter.observedFpp.toFloat
        out += Built(Row(f.path, f.size, f.mtime, entriesPerFile, rg, r.start, r.end, r.numRows, c.name,
          p.encoding.map(_.physical).orNull, p.encoding.map(_.logical).orNull,
          p.encoding.map(_.typeLength).getOrElse(0),
          p.encoding.exists(_.rebase), p.hasNull, p.nonNull, p.ndv, p.source, bytes,
          if (bytes == null) 0L else IndexStore.crc32(bytes)), observedFpp,
          if (p.filter == null) null else p.hashes, p.nHashes)
      }
      acc("rowGroups").add(footer.rowGroups.size)
      Some(out.toSeq)
    } finally {
      try if (reader != null) reader.close()
      finally if (harvestIn != null) harvestIn.close()
    }
  }

  private def isCrypto(e: Throwable): Boolean = {
    var t = e; var found = false
    while (t != null && !found) {
      found = t.getClass.getName.contains("Crypto") || String.valueOf(t.getMessage).contains("encrypted");
      t = t.getCause
    }
    found
  }

  /**
   * One entry: its row (IndexData.schema), its filter's FPP, and the distinct hashes inserted into the filter
   * (`hashes(0 until nHashes)`, for the segment's summary; null when the values were not read: harvested).
   */
  final case class Built(row: Row, fpp: Float, hashes: Array[Long], nHashes: Int)

  private final class ColumnPlan(var encoding: Option[ColumnEncoding], var hasNull: Boolean,
                                 var nonNull: Long, var ndv: Long, var filter: Sbbf, var source: String,
                                 val scan: Boolean, val column: IndexedColumn) {
    var hashes: Array[Long] = null; var nHashes = 0
  }

  private def plan(f: DataFile, footer: FooterInfo, rg: Int, c: IndexedColumn, harvest: Boolean,
                   stream: () => SeekableInputStream, acc: Map[String, LongAccumulator]): ColumnPlan = {
    val rows = footer.rowGroups(rg).numRows
    footer.chunk(rg, c.name) match {
      case None => // column absent from this file: Spark reads it as all nulls
        val p = new ColumnPlan(None, rows > 0, 0L, 0L, Sbbf.empty(32), "absent", scan = false, c)
        p.hashes = Array.emptyLongArray // no values: nothing for a summary to hold
        p
      case Some(ch) if ch.encoding.isEmpty =>
        new ColumnPlan(None, true, -1L, -1L, null, "unsupported-encoding", scan = false, c)
      case Some(ch) =>
        val harvested = if (!harvest || ch.bloomOffset.isEmpty) None
        else {
          try Some(NativeFilterReader.read(stream(), footer.fileLength, ch.bloomOffset.get, ch.bloomLength))
          catch { case _: InvalidBloomFilterException | _: java.io.IOException => None } // corrupt: scan instead
        }
        harvested match {
          case Some(filter) =>
            val nulls = ch.nullCount
            new ColumnPlan(ch.encoding, nulls.forall(_ > 0), nulls.map(rows - _).getOrElse(-1L), -1L, filter, "harvest",
              scan = false, c)
          case None => new ColumnPlan(ch.encoding, true, -1L, -1L, null, "scan", scan = true, c)
        }
    }
  }

  /**
   * Hashes the chunks of `toScan`, row group by row group, each the cheapest way its footer allows (see
   * [[ChunkHasher]]): the dictionary page alone when every data page is dictionary-encoded, the PLAIN page
   * bytes when every data page is PLAIN, the column reader otherwise (and whenever a page is not as the
   * footer promised). `fastPaths = false` forces the column reader everywhere (tests compare the two).
   */
  private def scanChunks(reader: ParquetFileReader, footer: FooterInfo, toScan: mutable.Map[(Int, String), ColumnPlan],
                         cols: Array[IndexedColumn], sizer: FilterSizer, acc: Map[String, LongAccumulator],
                         fastPaths: Boolean): Unit = {
    val fileRows = footer.rowGroups.map(_.numRows).sum
    val names = toScan.keys.map(_._2).toSeq.distinct.flatMap(footer.fieldName).distinct
    def fieldsOf(ns: Seq[String]) = ns.map(n => footer.schema.getFields.get(footer.schema.getFieldIndex(n))).asJava
    val projection = new MessageType(footer.schema.getName, fieldsOf(names))
    def request(ns: Seq[String]): Unit =
      reader.setRequestedSchema(new MessageType(footer.schema.getName, fieldsOf(ns.distinct)))
    var rg = 0
    while (rg < footer.rowGroups.size) {
      val wanted = cols.flatMap(c => toScan.get((rg, c.name)))
      if (wanted.isEmpty) reader.skipNextRowGroup()
      else {
        val jobs = wanted.map { p =>
          val field = footer.fieldName(p.column.name).get
          val desc = projection.getColumnDescription(Array(field))
          val meta = footer.chunk(rg, p.column.name).map(_.meta).orNull
          val way = if (!fastPaths || meta == null) 'r'
          else if (ChunkHasher.dictionaryOnly(meta, desc)) 'd'
          else if (ChunkHasher.plainOnly(meta, desc)) 'p'
          else 'r'
          (p, field, desc, meta, way)
        }
        val needPages = jobs.filter(_._5 != 'd').map(_._2).toSeq
        val pages = if (needPages.isEmpty) { reader.skipNextRowGroup(); null }
        else { request(needPages); reader.readNextRowGroup() }
        lazy val dictionaries: DictionaryPageReadStore = reader.getDictionaryReader(footer.blocks(rg))
        // The column reader over this row group's pages of `field`, read again when a fast path gave up.
        def slow(field: String, desc: ColumnDescriptor, pagesOk: Boolean): ChunkHasher.Hashed = {
          val ps = if (pagesOk) pages else { request(Seq(field)); reader.readRowGroup(rg) }
          ChunkHasher.Counters.reader.incrementAndGet()
          ChunkHasher.hash(ps, projection, desc, footer.createdBy)
        }
        for ((p, field, desc, meta, way) <- jobs) {
          val (hashes, count, nonNull, hasNull) = way match {
            case 'd' =>
              ChunkHasher.hashDictionary(dictionaries.readDictionaryPage(desc), desc) match {
                case Some(hs) =>
                  ChunkHasher.Counters.dictionary.incrementAndGet()
                  val nulls = ChunkHasher.nullCount(meta).get
                  (hs, hs.length, meta.getValueCount - nulls, nulls > 0)
                case None =>
                  val h = slow(field, desc, pagesOk = false); (h.hashes, h.count, h.count.toLong, h.nulls > 0)
              }
            case 'p' =>
              val h = ChunkHasher.hashPlainPages(pages, desc, meta.getValueCount) match {
                case Some(h) => ChunkHasher.Counters.plain.incrementAndGet(); h
                case None => slow(field, desc, pagesOk = false)
              }
              (h.hashes, h.count, h.count.toLong, h.nulls > 0)
            case _ =>
              val h = slow(field, desc, pagesOk = true)
              (h.hashes, h.count, h.count.toLong, h.nulls > 0)
          }
          val ndv = ChunkHasher.distinct(hashes, count)
          val target = p.column.ndv.map(cap => math.min(cap, ndv.toLong)).getOrElse(ndv.toLong)
          val fpp = sizer.targetFpp(p.column.name, target, footer.rowGroups(rg).numRows, fileRows)
          // The scalar kernel sets the same bits as the vector one, and needs no warm-up to be fast.
          val filter = Sbbf.empty(Sizing.indexBytes(target, fpp), Kernel.scalar)
          filter.insertAll(hashes, 0, ndv)
          p.filter = filter; p.hasNull = hasNull; p.nonNull = nonNull; p.ndv = ndv
          p.hashes = hashes; p.nHashes = ndv
          acc("scanned").add(1)
        }
      }
      rg += 1
    }
  }
}
