package sparkbloom.formats

import org.slf4j.LoggerFactory

import sparkbloom.formats.parquet.{ParquetFormat, ParquetV2Format}
import sparkbloom.index.TableFormat

/**
 * The table formats sparkbloom indexes and prunes, in the order they are asked: the one place formats are
 * registered. The rules and the index facade are handed this list; the core never names a format.
 *
 * Delta Lake and Iceberg are compiled for the Spark lines their projects publish a build for (the
 * `lakehouse.<line>` rows of project/versions.properties; their sources sit in variant directories,
 * `scala-src/formats/delta-*` and `iceberg-*`, chosen like the Spark shims). sparkbloom ships neither library: a
 * format is listed only when its own classes are on the classpath and its support is compiled into this jar, and
 * its support object is not touched before (loading it links the library's classes). Plain Parquet users need
 * neither jar.
 */
object TableFormats {
  private val log = LoggerFactory.getLogger(getClass)

  /** (the format's support object, a class of its library that must be present). */
  private val Optional: Seq[(String, String)] = Seq(
    "sparkbloom.formats.delta.DeltaFormat" -> "org.apache.spark.sql.delta.DeltaLog",
    "sparkbloom.formats.iceberg.IcebergFormat" -> "org.apache.iceberg.spark.source.SparkTable")

  /**
   * Every format this JVM can use. Delta comes before Parquet (its files are Parquet, but the log decides which
   * are live), and a Delta or Iceberg table is resolved as that format before anything else is tried.
   */
  lazy val all: Seq[TableFormat] = Optional.flatMap { case (support, library) => load(support, library) } ++
    Seq(ParquetFormat, ParquetV2Format)

  private def load(support: String, library: String): Option[TableFormat] = {
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    def present(cls: String): Boolean =
      try { Class.forName(cls, false, loader); true }
      catch { case _: ClassNotFoundException | _: LinkageError => false }
    if (!present(library)) None
    else try Some(Class.forName(support + "$", true, getClass.getClassLoader).getField("MODULE$").get(
          null).asInstanceOf[TableFormat])
    catch {
      case _: ClassNotFoundException => None // not compiled for this Spark line
      case e @ (_: ReflectiveOperationException | _: LinkageError) =>
        log.warn(s"sparkbloom: $support not loaded ($e); its tables are read unpruned"); None
    }
  }
}
