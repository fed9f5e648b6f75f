package sparkbloom.parquet

import java.nio.{ByteBuffer, ByteOrder}

import scala.jdk.CollectionConverters._

import org.apache.parquet.column.{ColumnDescriptor, Encoding}
import org.apache.parquet.column.impl.ColumnReadStoreImpl
import org.apache.parquet.column.page.{DataPage, DataPageV1, DataPageV2, DictionaryPage, PageReadStore}
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData
import org.apache.parquet.schema.MessageType
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import sparkbloom.hash.PlainHash

/**
 * Hashes the values of one column chunk straight from its pages, in the file's own physical type: the
 * bytes hashed are exactly the PLAIN encoding a Parquet writer would have put in a bloom filter, whatever
 * the Spark type of the column is. Nulls are counted, not hashed.
 *
 * Three ways, all giving the same set of hashes (and so the same filter):
 *  - [[hashDictionary]]: a chunk whose data pages are all dictionary-encoded (its footer's encoding stats
 *    say so) holds exactly the values of its dictionary page; only that page is read, its PLAIN values hashed.
 *  - [[hashPlainPages]]: a chunk whose data pages are all PLAIN is hashed from the decompressed page bytes,
 *    no value objects, no column reader.
 *  - [[hash]]: anything else (mixed dictionary/plain after a dictionary fallback, DELTA encodings, ...)
 *    through parquet-java's column reader.
 */
object ChunkHasher {
  final case class Hashed(hashes: Array[Long], count: Int, nulls: Long)

  /** Chunks hashed each way in this JVM (tests check a fast path really ran, not only its fallback). */
  object Counters {
    val dictionary = new java.util.concurrent.atomic.AtomicLong
    val plain = new java.util.concurrent.atomic.AtomicLong
    val reader = new java.util.concurrent.atomic.AtomicLong
  }

  /** The column reader path: every encoding parquet-java reads. */
  def hash(pages: PageReadStore, schema: MessageType, column: ColumnDescriptor, createdBy: String): Hashed = {
    val store = new ColumnReadStoreImpl(pages, new GroupRecordConverter(schema).getRootConverter, schema, createdBy)
    val reader = store.getColumnReader(column)
    val total = reader.getTotalValueCount
    require(total <= Int.MaxValue, s"column chunk of $total values")
    val maxDef = column.getMaxDefinitionLevel
    val out = new Array[Long](total.toInt)
    var n = 0; var nulls = 0L; var i = 0L
    val t = column.getPrimitiveType.getPrimitiveTypeName
    while (i < total) {
      if (reader.getCurrentDefinitionLevel == maxDef) {
        out(n) = t match {
          case PrimitiveTypeName.INT32 => PlainHash.int32(reader.getInteger)
          case PrimitiveTypeName.INT64 => PlainHash.int64(reader.getLong)
          case PrimitiveTypeName.FLOAT => PlainHash.float(reader.getFloat)
          case PrimitiveTypeName.DOUBLE => PlainHash.double(reader.getDouble)
          case PrimitiveTypeName.BINARY | PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY | PrimitiveTypeName.INT96 =>
            PlainHash.bytes(reader.getBinary.toByteBuffer)
          case other => throw new UnsupportedOperationException(s"cannot hash $other values")
        }
        n += 1
      } else nulls += 1
      reader.consume()
      i += 1
    }
    Hashed(out, n, nulls)
  }

  private def hashable(column: ColumnDescriptor): Boolean =
    column.getMaxRepetitionLevel == 0 && column.getPrimitiveType.getPrimitiveTypeName != PrimitiveTypeName.BOOLEAN

  private def dataEncodings(meta: ColumnChunkMetaData): Option[Set[Encoding]] =
    Option(meta).flatMap(m => Option(m.getEncodingStats)).map(_.getDataEncodings.asScala.toSet)

  /**
   * The chunk's values are exactly its dictionary's: the footer's encoding stats list a dictionary page and
   * only dictionary-encoded data pages, and its statistics count the nulls (the non-null count then comes
   * from the value count, as the page path would count it).
   */
  def dictionaryOnly(meta: ColumnChunkMetaData, column: ColumnDescriptor): Boolean =
    hashable(column) && meta != null && meta.getEncodingStats != null && {
      val es = meta.getEncodingStats
      es.hasDictionaryPages && !es.hasNonDictionaryEncodedPages && es.getDataEncodings.asScala.nonEmpty
    } && nullCount(meta).isDefined

  /** The chunk's null count from its statistics, when set. */
  def nullCount(meta: ColumnChunkMetaData): Option[Long] = {
    val stats = try Option(meta.getStatistics)
    catch { case _: Exception => None }
    stats.filter(s => s.isNumNullsSet && s.getNumNulls >= 0 && s.getNumNulls <= meta.getValueCount).map(_.getNumNulls)
  }

  /** Hashes of a dictionary page's values (PLAIN-encoded); None when the page is not as expected. */
  def hashDictionary(page: DictionaryPage, column: ColumnDescriptor): Option[Array[Long]] = {
    if (page == null || !(page.getEncoding == Encoding.PLAIN_DICTIONARY || page.getEncoding == Encoding.PLAIN))
      return None
    val size = page.getDictionarySize
    val out = new Array[Long](size)
    val bb = page.getBytes.toByteBuffer
    val n = hashPlain(bb, bb.position(), bb.limit(), column, out, 0)
    if (n == size) Some(out) else None
  }

  /** The footer says every data page is PLAIN-encoded (a dictionary page, if any, is unused). */
  def plainOnly(meta: ColumnChunkMetaData, column: ColumnDescriptor): Boolean =
    hashable(column) && dataEncodings(meta).contains(Set(Encoding.PLAIN)) && meta.getValueCount <= Int.MaxValue

  /**
   * Hashes a PLAIN chunk from its decompressed pages (v1 with RLE definition levels, or v2). None when a page
   * turns out otherwise: the caller then reads the row group again through [[hash]].
   */
  def hashPlainPages(pages: PageReadStore, column: ColumnDescriptor, valueCount: Long): Option[Hashed] = {
    val reader = pages.getPageReader(column)
    val out = new Array[Long](valueCount.toInt)
    val maxDef = column.getMaxDefinitionLevel
    var n = 0; var nulls = 0L; var seen = 0L
    var page: DataPage = reader.readPage()
    while (page != null) {
      val (bb, from) = page match {
        case v1: DataPageV1 =>
          if (v1.getValueEncoding != Encoding.PLAIN) return None
          val bb = v1.getBytes.toByteBuffer.slice().order(ByteOrder.LITTLE_ENDIAN)
          if (maxDef == 0) (bb, 0)
          else if (v1.getDlEncoding != Encoding.RLE || bb.limit() < 4) return None
          else {
            val levels = bb.getInt(0)
            if (levels < 0 || 4L + levels > bb.limit()) return None
            (bb, 4 + levels)
          }
        case v2: DataPageV2 =>
          if (v2.getDataEncoding != Encoding.PLAIN) return None
          val bb = v2.getData.toByteBuffer.slice().order(ByteOrder.LITTLE_ENDIAN)
          (bb, 0)
        case _ => return None
      }
      val before = n
      n = hashPlain(bb, from, bb.limit(), column, out, n)
      if (n < 0) return None
      val inPage = page.getValueCount.toLong
      if (n - before > inPage) return None
      nulls += inPage - (n - before)
      seen += inPage
      page = reader.readPage()
    }
    if (seen != valueCount) None else Some(Hashed(out, n, nulls))
  }

  /**
   * Hashes the PLAIN values in `bb[from, to)` into `out` from `at`; returns the new end, or -1 when the
   * bytes are not whole values or there are more than `out` holds.
   */
  private def hashPlain(buf: ByteBuffer, from: Int, to: Int, column: ColumnDescriptor, out: Array[Long], at: Int)
      : Int = {
    val bb = if (buf.order() == ByteOrder.LITTLE_ENDIAN) buf else buf.duplicate().order(ByteOrder.LITTLE_ENDIAN)
    var n = at; var pos = from
    val t = column.getPrimitiveType.getPrimitiveTypeName
    def fixed(width: Int): Int = {
      if ((to - from) % width != 0 || n + (to - from) / width > out.length) return -1
      t match {
        case PrimitiveTypeName.INT32 | PrimitiveTypeName.FLOAT =>
          while (pos < to) { out(n) = PlainHash.int32(bb.getInt(pos)); n += 1; pos += 4 }
        case PrimitiveTypeName.INT64 | PrimitiveTypeName.DOUBLE =>
          while (pos < to) { out(n) = PlainHash.int64(bb.getLong(pos)); n += 1; pos += 8 }
        case _ =>
          while (pos < to) { out(n) = PlainHash.bytes(bb, pos, width); n += 1; pos += width }
      }
      n
    }
    t match {
      case PrimitiveTypeName.INT32 | PrimitiveTypeName.FLOAT => fixed(4)
      case PrimitiveTypeName.INT64 | PrimitiveTypeName.DOUBLE => fixed(8)
      case PrimitiveTypeName.INT96 => fixed(12)
      case PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY =>
        if (column.getPrimitiveType.getTypeLength <= 0) -1 else fixed(column.getPrimitiveType.getTypeLength)
      case PrimitiveTypeName.BINARY =>
        while (pos < to) {
          if (to - pos < 4 || n >= out.length) return -1
          val len = bb.getInt(pos)
          if (len < 0 || len > to - pos - 4) return -1
          out(n) = PlainHash.bytes(bb, pos + 4, len); n += 1
          pos += 4 + len
        }
        n
      case _ => -1
    }
  }

  /**
   * Moves the distinct ones of the first `count` hashes to the front (in first-seen order); returns how many.
   * An open-addressing set at most half full, so linear instead of a sort; the set of distinct hashes (and
   * so the filter they are inserted into) is the same as sorting would give.
   */
  def distinct(hashes: Array[Long], count: Int): Int = {
    if (count == 0) return 0
    val cap = Integer.highestOneBit(math.max(count, 8) * 2 - 1) << 1 // power of two ≥ 2·count
    val mask = cap - 1
    val table = new Array[Long](cap) // 0 marks an empty slot; a hash of 0 is tracked apart
    var seenZero = false
    var w = 0; var r = 0
    while (r < count) {
      val h = hashes(r)
      if (h == 0L) {
        if (!seenZero) { seenZero = true; hashes(w) = h; w += 1 }
      } else {
        // the hashes are xxHash64 outputs: the bits above 32 spread well (the low ones pick the filter bits)
        var i = ((h >>> 29) ^ h).toInt & mask
        while (table(i) != 0L && table(i) != h) i = (i + 1) & mask
        if (table(i) == 0L) { table(i) = h; hashes(w) = h; w += 1 }
      }
      r += 1
    }
    w
  }
}
