package sparkbloom.parquet

import org.apache.parquet.hadoop.util.HadoopInputFile
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.TestSupport.{toHex, utf8}
import sparkbloom.hash.PlainHash
import sparkbloom.parquet.ParquetFixtures._
import sparkbloom.sbbf.{InvalidBloomFilterException, Sbbf}
import sparkbloom.shims.ParquetCompat

/** Filters written by parquet-mr, parquet-rs and DuckDB, read with NativeFilterReader (fixtures/README.md). */
class NativeFilterFixturesSuite extends AnyFunSuite {

  private val fourteen = Seq("Hello", "This is", "a", "test", "How", "are you", "doing ", "today", "the quick",
    "brown fox", "jumps", "over", "the lazy", "dog")
  private val absent = Seq("b", "c", "d", "NOT_EXISTS", "Hello_Not_Exists", "not_exists", "hello", "doing", "")

  private def str(f: Sbbf, s: String): Boolean = f.mightContain(PlainHash.bytes(utf8(s)))

  private val noStoredLength =
    "parquet-java 1.13 (Spark 3.5) does not read bloom_filter_length: a filter's stored length is not checked there"

  /** The chunk's bloom_filter_length as read from the footer: `expected`, or none where parquet-java cannot read it. */
  private def assertStoredLength(c: Chunk, expected: Int): Unit =
    if (ParquetCompat.storedLengthReadable) assert(NativeFilterReader.storedLength(c.meta).contains(expected))
    else assert(NativeFilterReader.storedLength(c.meta).isEmpty)

  test("parquet-mr's filter without bloom_filter_length is found by parsing its 16-byte header") {
    val c = chunk("parquet-testing/data_index_bloom_encoding_stats.parquet", 0, "String")
    assert(c.meta.getBloomFilterOffset == 192)
    assert(NativeFilterReader.storedLength(c.meta).isEmpty)
    val f = filter("parquet-testing/data_index_bloom_encoding_stats.parquet", c).get
    assert(f.numBytes == 1024)
    fourteen.foreach(v => assert(str(f, v), v))
    absent.foreach(v => assert(!str(f, v), v))
  }

  test("parquet-rs's filter with bloom_filter_length 2064 holds the same 14 values") {
    val c = chunk("parquet-testing/data_index_bloom_encoding_with_length.parquet", 0, "String")
    assert(c.meta.getBloomFilterOffset == 253)
    assertStoredLength(c, 2064)
    val f = filter("parquet-testing/data_index_bloom_encoding_with_length.parquet", c).get
    assert(f.numBytes == 2048)
    fourteen.foreach(v => assert(str(f, v), v))
    absent.foreach(v => assert(!str(f, v), v))
  }

  test("our reader returns the bitset parquet-java's own BloomFilterReader returns") {
    for (file <- Seq("parquet-testing/data_index_bloom_encoding_stats.parquet",
        "parquet-testing/data_index_bloom_encoding_with_length.parquet", "duckdb/multi_bloom_a.parquet")) {
      val c = chunks(file).head
      val theirs = new java.io.ByteArrayOutputStream()
      parquetJavaFilter(file, c).writeTo(theirs)
      assert(filter(file, c).get.toBytes.sameElements(theirs.toByteArray), file)
    }
  }

  test("the 14 rows of the parquet-testing files are the 14 values the filters hold") {
    val rows = rowsByRowGroup("parquet-testing/data_index_bloom_encoding_stats.parquet").flatten
    assert(rows.map(_.getString("String", 0)).toSet == fourteen.toSet)
  }

  test("DuckDB's single-value filters contain their own value and not the others'") {
    for ((file, value) <- Seq("a" -> 1, "b" -> 2, "c" -> 3)) {
      val name = s"duckdb/multi_bloom_$file.parquet"
      val c = chunk(name, 0, "a")
      assert(c.meta.getBloomFilterOffset == 51, name)
      assertStoredLength(c, 47)
      val f = filter(name, c).get
      assert(f.numBytes == 32)
      for (v <- 1 to 3) assert(f.mightContain(PlainHash.int32(v)) == (v == value), s"$name probed with $v")
    }
  }

  test("multi_bloom_a's bitset is the 32 bytes of vectors.md") {
    val f = filter("duckdb/multi_bloom_a.parquet", chunk("duckdb/multi_bloom_a.parquet", 0, "a")).get
    assert(toHex(f.toBytes) == "0400000000000004004000000400000000000004002000000000000200080000")
  }

  test("bloom_filter_bad_numbytes: the patched header is rejected with a clear error") {
    val file = "duckdb/bloom_filter_bad_numbytes.parquet"
    val e = intercept[InvalidBloomFilterException](filter(file, chunk(file, 0, "r")))
    assert(e.getMessage.contains("10000") && e.getMessage.contains("multiple of 32"), e.getMessage)
  }

  // DuckDB's patch lengthened row group 0's `r` header by two bytes (numBytes 10000 is a 3-byte varint where
  // 32 took one), without moving the footer's offsets: every later filter starts two bytes after its offset.
  test("bloom_filter_bad_numbytes: no chunk gives a false negative or a crash, whatever its offset") {
    neverWrong("duckdb/bloom_filter_bad_numbytes.parquet")
  }

  test("bloom_filter_bad_numbytes: the stale offsets of the later filters are rejected, the true ones are good") {
    shiftedFiltersAreGood("duckdb/bloom_filter_bad_numbytes.parquet")
  }

  test("bloom_filter_bad_length_range: a length past the end of the file is rejected with a clear error") {
    val file = "duckdb/bloom_filter_bad_length_range.parquet"
    assume(ParquetCompat.storedLengthReadable, noStoredLength)
    val c = chunk(file, 0, "r")
    val fileLength = HadoopInputFile.fromPath(path(file), conf).getLength
    assert(NativeFilterReader.storedLength(c.meta).exists(c.meta.getBloomFilterOffset + _ > fileLength))
    val e = intercept[InvalidBloomFilterException](filter(file, c))
    assert(e.getMessage.contains("outside the file"), e.getMessage)
  }

  test("bloom_filter_bad_length_range: no chunk gives a false negative or a crash") {
    neverWrong("duckdb/bloom_filter_bad_length_range.parquet")
    shiftedFiltersAreGood("duckdb/bloom_filter_bad_length_range.parquet")
  }

  test("bloom_filter_short_numbytes: a header smaller than the stored length is rejected") {
    assume(ParquetCompat.storedLengthReadable, noStoredLength)
    val file = "duckdb/bloom_filter_short_numbytes.parquet"
    val c = chunk(file, 0, "r")
    assert(NativeFilterReader.storedLength(c.meta).contains(528))
    val e = intercept[InvalidBloomFilterException](filter(file, c))
    assert(e.getMessage.contains("256") && e.getMessage.contains("528"), e.getMessage)
  }

  test("bloom_filter_short_numbytes: trusting the header would lose 200, the full 512 bytes hold every value") {
    val file = "duckdb/bloom_filter_short_numbytes.parquet"
    val c = chunk(file, 0, "r")
    val bytes = java.nio.file.Files.readAllBytes(new java.io.File(path(file).toUri).toPath)
    val bitsetStart = c.meta.getBloomFilterOffset.toInt + 16
    val trusted = Sbbf.fromBytes(bytes, bitsetStart, 256)
    assert(!trusted.mightContain(PlainHash.int64(200)))
    val whole = Sbbf.fromBytes(bytes, bitsetStart, 512)
    assert((0 to 990 by 10).forall(v => whole.mightContain(PlainHash.int64(v.toLong))))
    val values = rowsByRowGroup(file).flatten.map(_.getLong("r", 0)).toSet
    assert(values == (0 to 990 by 10).map(_.toLong).toSet)
  }

  test("offsets and lengths outside the file are rejected before reading") {
    val file = "parquet-testing/data_index_bloom_encoding_with_length.parquet"
    val length = HadoopInputFile.fromPath(path(file), conf).getLength
    val cases = Seq((-1L, Some(2064)), (length, Some(16)), (length + 100, None), (253L, Some(0)), (253L, Some(-5)),
      (253L, Some(Int.MaxValue)), (length - 10, None), (253L, Some(2063)), (253L, Some(2065)), (0L, None),
      (0L, Some(2064)))
    for ((offset, len) <- cases)
      intercept[InvalidBloomFilterException](NativeFilterReader.read(conf, path(file), offset, len))
    assert(NativeFilterReader.read(conf, path(file), 253, Some(2064)).numBytes == 2048)
    assert(NativeFilterReader.read(conf, path(file), 253, None).numBytes == 2048)
  }

  test("a chunk without a filter reads as None") {
    val meta = chunk("parquet-testing/data_index_bloom_encoding_stats.parquet", 0, "String").meta
    val copy = org.apache.parquet.hadoop.metadata.ColumnChunkMetaData.get(meta.getPath, meta.getPrimitiveType,
      meta.getCodec, meta.getEncodingStats, meta.getEncodings, meta.getStatistics, meta.getFirstDataPageOffset,
      meta.getDictionaryPageOffset, meta.getValueCount, meta.getTotalSize, meta.getTotalUncompressedSize)
    val file = HadoopInputFile.fromPath(path("parquet-testing/data_index_bloom_encoding_stats.parquet"), conf)
    val in = file.newStream()
    try assert(NativeFilterReader.read(in, file.getLength, copy).isEmpty)
    finally in.close()
  }

  private val rowsCache = scala.collection.mutable.Map.empty[String, Seq[Seq[org.apache.parquet.example.data.Group]]]

  private def hashesOf(file: String, c: Chunk): Seq[Long] = rowsCache.getOrElseUpdate(file, rowsByRowGroup(file))(
    c.rowGroup).map { g =>
    c.column match {
      case "r" => PlainHash.int64(g.getLong("r", 0))
      case "r_int32" => PlainHash.int32(g.getInteger("r_int32", 0))
      case "r_string" => PlainHash.bytes(g.getBinary("r_string", 0).getBytes)
    }
  }.distinct

  /** Each chunk's filter either holds all of its row group's values or is rejected as invalid. */
  private def neverWrong(file: String): Unit = {
    val all = chunks(file)
    assert(all.size == 30)
    var rejected = 0
    for (c <- all) {
      try {
        val f = filter(file, c).getOrElse(fail(s"row group ${c.rowGroup} ${c.column} has no filter"))
        assert(hashesOf(file, c).forall(f.mightContain), s"false negative in row group ${c.rowGroup} ${c.column}")
      } catch { case _: InvalidBloomFilterException => rejected += 1 }
    }
    assert(rejected >= 1)
  }

  /** Every filter after the patched one is rejected at its stale offset and complete two bytes later. */
  private def shiftedFiltersAreGood(file: String): Unit = {
    assume(ParquetCompat.storedLengthReadable, noStoredLength)
    val later = chunks(file).filterNot(c => c.rowGroup == 0 && c.column == "r")
    assert(later.size == 29)
    for (c <- later) {
      val len = NativeFilterReader.storedLength(c.meta)
      assert(len.contains(47))
      intercept[InvalidBloomFilterException](NativeFilterReader.read(conf, path(file), c.meta.getBloomFilterOffset,
        len))
      val f = NativeFilterReader.read(conf, path(file), c.meta.getBloomFilterOffset + 2, len)
      assert(f.numBytes == 32)
      assert(hashesOf(file, c).forall(f.mightContain), s"row group ${c.rowGroup} ${c.column}")
    }
  }
}
