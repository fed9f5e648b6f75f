package sparkbloom.parquet

import org.apache.parquet.column.ColumnDescriptor
import org.apache.parquet.column.impl.ColumnReadStoreImpl
import org.apache.parquet.column.page.PageReadStore
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter
import org.apache.parquet.schema.MessageType
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import sparkbloom.hash.PlainHash

/**
 * Hashes the values of one column chunk straight from its pages, in the file's own physical type: the
 * bytes hashed are exactly the PLAIN encoding a Parquet writer would have put in a bloom filter, whatever
 * the Spark type of the column is. Nulls are counted, not hashed.
 */
object ChunkHasher {
  final case class Hashed(hashes: Array[Long], count: Int, nulls: Long)

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

  /** Sorts the first `count` hashes in place and moves the distinct ones to the front; returns how many. */
  def distinct(hashes: Array[Long], count: Int): Int = {
    if (count == 0) return 0
    java.util.Arrays.sort(hashes, 0, count)
    var w = 1; var r = 1
    while (r < count) { if (hashes(r) != hashes(w - 1)) { hashes(w) = hashes(r); w += 1 }; r += 1 }
    w
  }
}
