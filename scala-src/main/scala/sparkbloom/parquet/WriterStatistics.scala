package sparkbloom.parquet

import scala.util.control.NonFatal

import org.apache.parquet.{SemanticVersion, VersionParser}

/** What a file's writer (its footer's `created_by`) puts in the min/max of float and double column chunks and pages. */
object WriterStatistics {

  /**
   * parquet-java orders doubles and floats by `Double.compare`/`Float.compare` since 1.10.0 (PARQUET-1025), so a
   * chunk holding a NaN gets NaN as its max, and its reader drops float statistics whose min or max is NaN
   * (PARQUET-1246, `Statistics.Builder`); its column-index builder marks an index with a NaN page invalid and
   * writes none. Before 1.10 its statistics compared with `<`/`>`, which leaves NaN out unless it came first.
   */
  val NaNCountingParquetJava: SemanticVersion = new SemanticVersion(1, 10, 0)

  /**
   * Whether the writer named by `createdBy` is known to let a NaN reach float and double min/max (so a chunk or
   * page holding NaN has no statistics parquet-java would filter by): parquet-java (`parquet-mr`, as Spark, Hive
   * and parquet-java's own writers record it) from 1.10.0. Every other writer, an unparsable or missing
   * `created_by` and older parquet-java are not: Arrow C++ (pyarrow), arrow-rs (DataFusion, Polars) and others
   * leave NaN out of min/max as the format says, which parquet-java's statistics and page-index filters take for
   * bounds of every value.
   */
  def countsNaNInMinMax(createdBy: String): Boolean =
    createdBy != null &&
      (try {
        val v = VersionParser.parse(createdBy)
        (v.application == "parquet-mr" || v.application == "parquet-java") && v.hasSemanticVersion &&
        v.getSemanticVersion.compareTo(NaNCountingParquetJava) >= 0
      } catch { case NonFatal(_) => false })
}
