package sparkbloom.api

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}
import org.apache.parquet.ParquetReadOptions
import org.apache.parquet.crypto.ParquetCryptoRuntimeException
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.{BlockMetaData, ColumnChunkMetaData, FileMetaData}
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.SeekableInputStream

import sparkbloom.parquet.NativeFilterReader
import sparkbloom.sbbf.{Sbbf, Sizing}
import sparkbloom.shims.ParquetCompat

/**
 * `python -m sparkbloom inspect`: what native bloom filters a Parquet file (or a directory of them,
 * recursively, skipping `_*` and `.*` names) carries, read with the same strict parser the index uses.
 *
 * Per file, row group and column chunk: whether the chunk has a filter, its size, whether it is valid
 * (any reason it cannot be used is reported as `corrupt: <reason>`), its estimated and observed FPP,
 * and for each probe `column=value` whether the row group might contain the value. Encrypted files are
 * reported as such and nothing in them is read. Needs Hadoop's FileSystem only, no Spark.
 */
object Inspector {
  val NdvNote: String =
    "fpp_estimated takes every value of the chunk as distinct: Parquet files do not record the number of " +
      "distinct values, so the value count is used as an upper bound and the real FPP is at most this. " +
      "fpp_observed is measured from the bits actually set."

  def inspect(conf: Configuration, path: String, probes: Array[String]): String = {
    val parsed = Option(probes).toSeq.flatten.map(Probe.parse)
    val root = new Path(path)
    val fs = root.getFileSystem(conf)
    val files = walk(fs, fs.getFileStatus(root), top = true) // FileNotFoundException for a missing path
    Json.write(Json.obj(
        "path" -> path,
        "probes" -> parsed.map(p => Json.obj("column" -> p.column, "value" -> p.value)),
        "ndv_note" -> NdvNote,
        "files" -> files.map(file(conf, _, parsed))))
  }

  private def walk(fs: FileSystem, st: FileStatus, top: Boolean): Seq[FileStatus] = {
    val name = st.getPath.getName
    if (!top && (name.startsWith("_") || name.startsWith("."))) Seq.empty
    else if (st.isDirectory) fs.listStatus(st.getPath).toSeq.sortBy(_.getPath.getName).flatMap(walk(fs, _, top = false))
    else Seq(st)
  }

  private def file(conf: Configuration, st: FileStatus, probes: Seq[Probe]): java.util.Map[String, AnyRef] = {
    val len = st.getLen
    def result(status: String, more: (String, Any)*) =
      Json.obj(Seq[(String, Any)]("file" -> st.getPath.toString, "size_in_bytes" -> len, "status" -> status) ++
          more: _*)
    val encrypted = result("encrypted", "note" -> "encrypted and no keys given: nothing was read")
    val input = HadoopInputFile.fromStatus(st, conf)
    val in = input.newStream()
    try magic(in, len) match {
        case Some("PARE") => encrypted
        case Some("PAR1") =>
          val reader = ParquetFileReader.open(input, ParquetReadOptions.builder().build())
          val footer = try reader.getFooter
          finally reader.close()
          val meta = footer.getFileMetaData
          if (meta.getEncryptionType != FileMetaData.EncryptionType.UNENCRYPTED ||
            footer.getBlocks.asScala.exists(_.getColumns.asScala.exists(_.isEncrypted))) encrypted
          else result("ok",
            "created_by" -> meta.getCreatedBy,
            "num_rows" -> footer.getBlocks.asScala.map(_.getRowCount).sum,
            "row_groups" -> footer.getBlocks.asScala.toSeq.zipWithIndex.map { case (b, i) =>
              rowGroup(in, len, b, i, probes)
            })
        case _ => result("not parquet", "note" -> "no Parquet magic at both ends: skipped")
      }
    catch {
      case _: ParquetCryptoRuntimeException => encrypted
      case NonFatal(e) => result(s"unreadable: ${reason(e)}")
    } finally in.close()
  }

  /** "PAR1" (plain) or "PARE" (encrypted footer) when both ends of the file carry it. */
  private def magic(in: SeekableInputStream, len: Long): Option[String] =
    if (len < 12) None
    else {
      val head = read(in, 0, 4); val tail = read(in, len - 4, 4)
      if (java.util.Arrays.equals(head, tail)) Some(new String(head, "US-ASCII")) else None
    }

  private def rowGroup(in: SeekableInputStream, fileLen: Long, b: BlockMetaData, index: Int, probes: Seq[Probe]) = {
    val chunks = b.getColumns.asScala.toSeq
    val filters = chunks.map(c => filter(in, fileLen, c))
    Json.obj(
      "index" -> index,
      "num_rows" -> b.getRowCount,
      "columns" -> chunks.zip(filters).map { case (c, f) => column(c, f) },
      "probes" -> probes.map { p =>
        val hit = chunks.indexWhere(_.getPath.toDotString == p.column) match {
          case -1 => chunks.indexWhere(_.getPath.toDotString.equalsIgnoreCase(p.column))
          case i => i
        }
        Json.obj("column" -> p.column, "value" -> p.value,
          "result" -> (if (hit < 0) "no such column" else probe(p, chunks(hit), filters(hit))))
      })
  }

  private sealed trait Filter
  private case object Absent extends Filter
  private final case class Valid(sbbf: Sbbf) extends Filter
  private final case class Corrupt(reason: String) extends Filter

  /** Reads the chunk's filter with the index's own reader, which trusts nothing and checks every bound. */
  private def filter(in: SeekableInputStream, fileLen: Long, c: ColumnChunkMetaData): Filter =
    try NativeFilterReader.read(in, fileLen, c).map(Valid(_)).getOrElse(Absent)
    catch { case NonFatal(e) => Corrupt(reason(e)) }

  private def column(c: ColumnChunkMetaData, f: Filter) = {
    val t = c.getPrimitiveType
    val values = c.getValueCount
    val common = Seq[(String, Any)](
      "column" -> c.getPath.toDotString,
      "physical_type" ->
        (physicalName(t) +
          (if (t.getTypeLength > 0) s"(${t.getTypeLength})" else "")),
      "logical_type" -> Option(t.getLogicalTypeAnnotation).map(_.toString),
      "values" -> values,
      "offset" -> Some(c.getBloomFilterOffset).filter(_ >= 0),
      "stored_length" -> ParquetCompat.storedBloomLength(c).filter(_ > 0))
    f match {
      case Absent => Json.obj(common :+ ("bloom_filter" -> "absent"): _*)
      case Corrupt(why) => Json.obj(common :+ ("bloom_filter" -> s"corrupt: $why"): _*)
      case Valid(s) => Json.obj(common ++ Seq(
            "bloom_filter" -> "ok",
            "num_bytes" -> s.numBytes,
            "ndv_upper_bound" -> values,
            "fpp_estimated" -> Sizing.fpp(s.numBytes, values),
            "fpp_observed" -> s.observedFpp): _*)
    }
  }

  /** The Parquet spec's names (parquet-java calls BYTE_ARRAY "BINARY"). */
  private def physicalName(t: org.apache.parquet.schema.PrimitiveType): String = t.getPrimitiveTypeName match {
    case org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName.BINARY => "BYTE_ARRAY"
    case other => other.toString
  }

  private def probe(p: Probe, c: ColumnChunkMetaData, f: Filter): String = f match {
    case Absent => "no filter"
    case Corrupt(_) => "corrupt filter"
    case Valid(s) => p.hashes(c.getPrimitiveType) match {
        case Left(why) => s"cannot probe: $why"
        case Right(hs) => if (hs.exists(s.mightContain)) "maybe" else "no"
      }
  }

  private def read(in: SeekableInputStream, offset: Long, length: Int): Array[Byte] = {
    val buf = new Array[Byte](length)
    in.seek(offset)
    in.readFully(buf)
    buf
  }

  /** The exception's message, without Thrift's object dumps (which hold identity hashes) and jargon. */
  private def reason(e: Throwable): String =
    Option(e.getMessage).filter(_.nonEmpty).getOrElse(e.getClass.getSimpleName)
      .replace("can not read class org.apache.parquet.format.BloomFilterHeader: ", "")
      .replace("Socket is closed by peer.", "the header is truncated")
      .replaceAll("""\s*Struct: .*$""", "")
}
