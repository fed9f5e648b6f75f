package sparkbloom.parquet

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.ParquetReadOptions
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.{BlockMetaData, ColumnChunkMetaData, ParquetMetadata}
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.InputFile
import org.apache.parquet.schema.MessageType

import sparkbloom.hash.ColumnEncoding
import sparkbloom.shims.ParquetCompat

/** A row group as the index needs it: its ordinal, its byte range in the file and its row count. */
final case class RowGroupRange(ordinal: Int, start: Long, end: Long, numRows: Long)

/** One indexed column in one row group. */
final case class ChunkInfo(column: String, encoding: Option[ColumnEncoding], nullCount: Option[Long],
                           bloomOffset: Option[Long], bloomLength: Option[Int], encrypted: Boolean,
                           meta: ColumnChunkMetaData = null)

/** Footer facts of one Parquet file, for a set of top-level columns. */
final case class FooterInfo(rowGroups: IndexedSeq[RowGroupRange], fileLength: Long, schema: MessageType,
                            keyValueMetadata: java.util.Map[String, String], createdBy: String,
                            blocks: IndexedSeq[BlockMetaData], metadata: ParquetMetadata = null,
                            aliases: Map[String, Option[String]] = Map.empty) {

  /**
   * The file's top-level field name for `column` (exact match first, then case-insensitive); for a column
   * given an alias ([[resolving]]), the field the alias names, or none.
   */
  def fieldName(column: String): Option[String] = aliases.get(column) match {
    case Some(alias) => alias
    case None =>
      val names = schema.getFields.asScala.map(_.getName)
      names.find(_ == column).orElse(names.find(_.equalsIgnoreCase(column)))
  }

  /**
   * This footer with the indexed columns that are not found by name (Delta's physical names under column
   * mapping, Iceberg's field ids) resolved to this file's field: by id strictly (a file without the field
   * id has no such column, whatever its names), by the physical name exactly.
   */
  def resolving(columns: Seq[FileColumn]): FooterInfo = {
    val fields = schema.getFields.asScala
    val more = columns.collect {
      case c if c.fieldId.isDefined =>
        c.name -> fields.find(f => f.getId != null && f.getId.intValue == c.fieldId.get).map(_.getName)
      case c if c.fileName.isDefined => c.name -> fields.find(_.getName == c.fileName.get).map(_.getName)
    }
    if (more.isEmpty) this else copy(aliases = aliases ++ more)
  }

  /**
   * Whether this file's bloom filters can be validated. Without `bloom_filter_length` (parquet-java 1.13,
   * Spark 3.5) a header claiming fewer bytes than were written cannot be told from a good one, and probing
   * it would give false negatives; parquet-java's own writer never writes one, so only its filters are used.
   */
  def filtersTrusted: Boolean =
    ParquetCompat.storedLengthReadable || Option(createdBy).exists(_.startsWith("parquet-mr"))

  def chunk(rowGroup: Int, column: String): Option[ChunkInfo] = fieldName(column).flatMap { name =>
    val field = schema.getFields.get(schema.getFieldIndex(name))
    blocks(rowGroup).getColumns.asScala.find(c => c.getPath.size() == 1 && c.getPath.toArray.head == name).map { c =>
      val stats = try Option(c.getStatistics)
      catch { case _: Exception => None }
      ChunkInfo(name, FileEncodings.of(field, keyValueMetadata),
        stats.filter(s => s.isNumNullsSet).map(_.getNumNulls),
        Some(c.getBloomFilterOffset).filter(_ >= 0).filter(_ => filtersTrusted),
        NativeFilterReader.storedLength(c),
        c.isEncrypted, c)
    }
  }
}

object Footers {
  /** Fresh read options (each reader releases its own codec factory on close); see ParquetCompat.readOptions. */
  def readOptions(): ParquetReadOptions = ParquetCompat.readOptions()

  /** `ParquetFileReader.open(input)` with the same default options. */
  def open(input: InputFile): ParquetFileReader = ParquetFileReader.open(input, readOptions())

  /** Opens `path` with a footer read earlier (by the sizing job), so it is not read again. */
  def open(conf: Configuration, path: Path, footer: ParquetMetadata): ParquetFileReader =
    ParquetCompat.openWithFooter(conf, path, footer)

  /**
   * Bytes [[readTail]] reads from a file's end: the footer of a few columns and row groups, and some of what
   * parquet-java writes before it (filters); [[TailStream.prefetchFrom]] fetches the rest of the filters at once.
   */
  val TailBytes: Int = 16 * 1024

  /**
   * [[TailBytes]] on a remote store (an object store): a GET costs a round trip whether it returns 16 KiB or 64 KiB,
   * so one read of the last 64 KiB usually brings the filters of a small file with its footer.
   */
  val RemoteTailBytes: Int = 64 * 1024

  private val Magic = "PAR1".getBytes(java.nio.charset.StandardCharsets.US_ASCII)

  /**
   * The footer of the file at `path`, whose length was listed as `length`, read with the bytes before it in one
   * read of the file's last [[TailBytes]], and a stream over the file that serves reads inside those
   * bytes from memory. The file is opened once and no file status is asked for. parquet-java writes the bloom
   * filters right before the footer, so a harvest of a small file reads nothing more.
   *
   * None whenever this shortcut does not apply or anything fails: no "PAR1" at the listed end (an encrypted
   * footer, a file changed since it was listed), a footer that does not parse, an encrypted column. The caller
   * then opens the file through parquet-java as before, which reports the problem as it always did.
   */
  def readTail(conf: Configuration, path: Path, length: Long): Option[(ParquetMetadata, TailStream)] = {
    if (length < 12) return None
    // opened with its listed length: no HEAD on S3A
    val (in, tailBytes) = try {
      val fs = path.getFileSystem(conf)
      (StoreFiles.openListed(fs, path, length, sequential = false),
        if (StoreFiles.remote(fs)) RemoteTailBytes else TailBytes)
    } catch { case _: Exception => return None }
    // None (the stream closed) for anything but a plain footer at the listed end
    val parsed = try plainFooter(in, length, tailBytes).flatMap { case (start, tail, footerBytes) =>
        val thrift = org.apache.parquet.format.Util.readFileMetaData(new java.io.ByteArrayInputStream(footerBytes))
        val encrypted = thrift.isSetEncryption_algorithm || thrift.getRow_groups.asScala.exists(
          _.getColumns.asScala.exists(c => c.isSetCrypto_metadata || c.isSetEncrypted_column_metadata))
        if (encrypted) None
        else Some((new org.apache.parquet.format.converter.ParquetMetadataConverter().fromParquetMetadata(thrift),
          new TailStream(in, start, tail)))
      }
    catch { case _: Exception => None }
    if (parsed.isEmpty) in.close()
    parsed
  }

  /**
   * The `created_by` of the file at `path` (listed length `length`), from its footer read without its row groups
   * (one read of the file's last bytes, a second only for a footer longer than them). None when the file has no
   * plain footer at the listed end (an encrypted footer, a changed file), none is recorded, or anything fails.
   */
  def createdBy(conf: Configuration, path: Path, length: Long): Option[String] = {
    if (length < 12) return None
    val in = StoreFiles.openListed(path.getFileSystem(conf), path, length, sequential = false) // no HEAD on S3A
    try plainFooter(in, length, 8 * 1024).flatMap { case (_, _, footerBytes) =>
        val thrift = org.apache.parquet.format.Util.readFileMetaData(new java.io.ByteArrayInputStream(footerBytes),
          true)
        if (thrift.isSetCreated_by) Some(thrift.getCreated_by) else None
      }
    catch { case scala.util.control.NonFatal(_) => None }
    finally in.close()
  }

  /**
   * The Thrift bytes of the plain footer at the listed end of a file of `length` bytes (at least 12), read with
   * one read of its last `tailBytes` (a second only for a longer footer), with where that tail starts and its
   * bytes; None without "PAR1" at the end (an encrypted footer, a file changed since it was listed) or with an
   * impossible footer length.
   */
  private def plainFooter(in: org.apache.hadoop.fs.FSDataInputStream, length: Long, tailBytes: Int)
      : Option[(Long, Array[Byte], Array[Byte])] = {
    val n = math.min(length, tailBytes.toLong).toInt
    val start = length - n
    val tail = new Array[Byte](n)
    TailStream.readAt(in, start, tail, 0, n)
    val footerLength = java.nio.ByteBuffer.wrap(tail, n - 8, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt
    val footerStart = length - 8 - footerLength
    if (!java.util.Arrays.equals(tail, n - 4, n, Magic, 0, 4) || footerLength <= 0 || footerStart < 4) None
    else {
      val footerBytes =
        if (footerStart >= start) java.util.Arrays.copyOfRange(tail, (footerStart - start).toInt, n - 8)
        else { val b = new Array[Byte](footerLength); TailStream.readAt(in, footerStart, b, 0, footerLength); b }
      Some((start, tail, footerBytes))
    }
  }

  def read(conf: Configuration, path: Path): FooterInfo = {
    val input = HadoopInputFile.fromPath(path, conf)
    val reader = open(input)
    try fromMetadata(reader.getFooter, input.getLength)
    finally reader.close()
  }

  /**
   * The footer of the file at `path`, whose length is `length`: from one read of its tail ([[readTail]]), or,
   * where that shortcut does not apply, as [[read]] reads it (which reports any problem as parquet-java does).
   */
  def read(conf: Configuration, path: Path, length: Long): FooterInfo = readTail(conf, path, length) match {
    case Some((md, in)) => in.close(); fromMetadata(md, length)
    case None => read(conf, path)
  }

  /**
   * Footers read by the sizing job, handed to the build job that follows it in the same executor JVM
   * (local mode, or a file scheduled on the same executor): keyed by path, listed size and mtime, taken
   * (removed) by the build, softly referenced so memory pressure drops them. A miss just reads the footer.
   */
  private val handOver =
    new java.util.concurrent.ConcurrentHashMap[(String, Long, Long), java.lang.ref.SoftReference[ParquetMetadata]]()
  private val HandOverMax = 100000

  private def key(path: String, size: Long, mtime: Long): (String, Long, Long) = (path, size, mtime)

  def remember(path: String, size: Long, mtime: Long, footer: ParquetMetadata): Unit =
    if (handOver.size < HandOverMax) handOver.put(key(path, size, mtime), new java.lang.ref.SoftReference(footer))

  def take(path: String, size: Long, mtime: Long): Option[ParquetMetadata] =
    Option(handOver.remove(key(path, size, mtime))).flatMap(r => Option(r.get))

  /**
   * Row group i covers bytes [start_i, start_{i+1}) (the last one up to the footer). Spark's reader keeps
   * a row group in a split when its midpoint lies in the split, and every midpoint lies in its own range,
   * so intersecting a split with these ranges selects exactly the same row groups.
   */
  def fromMetadata(md: ParquetMetadata, fileLength: Long): FooterInfo = {
    val blocks = md.getBlocks.asScala.toIndexedSeq
    val starts = blocks.map(_.getStartingPos)
    val sortedStarts = starts.sorted
    val ranges = blocks.indices.map { i =>
      val next = sortedStarts.find(_ > starts(i))
      val end = next.getOrElse(fileLength)
      RowGroupRange(i, starts(i), math.max(end, starts(i) + 1), blocks(i).getRowCount)
    }
    val fmd = md.getFileMetaData
    FooterInfo(ranges, fileLength, fmd.getSchema, fmd.getKeyValueMetaData, fmd.getCreatedBy, blocks, md)
  }
}

/**
 * A column as the data files know it when not by its name: `fileName` (Delta's physical name under column
 * mapping) or `fieldId` (Iceberg's field id); both None for a column found by `name`.
 */
final case class FileColumn(name: String, fileName: Option[String], fieldId: Option[Int])
