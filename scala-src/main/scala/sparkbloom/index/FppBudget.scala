package sparkbloom.index

import sparkbloom.BloomConf
import sparkbloom.sbbf.{Sbbf, Sizing}

/**
 * How the filters of one column are sized: the false-positive probability p_i each row group's filter gets.
 *
 * A lookup of one value reads, in expectation, Σ p_i row groups in error over the R row groups of the table
 * (an IN of k values about k·Σ p_i while that is small). A fixed p per row group therefore makes false reads
 * grow with the table (R·p). The default policy fixes the sum instead:
 *
 * {{{
 *   TableBudget(ε):  p_i = ε · n_i / N,   N ≥ Σ n_i   ⇒   Σ p_i ≤ ε
 * }}}
 *
 * where n_i is row group i's distinct count and N an upper bound of their sum over the table (the non-null
 * value counts from the footers, exact for unique keys). Giving p_i in proportion to n_i minimises the total
 * bits for a given Σ p_i (bits ≈ n_i·c·ln(1/p_i); the Lagrangian gives p_i ∝ n_i, as in Monkey, SIGMOD'17),
 * and every value then costs the same bits. With R row groups of equal n_i that is p = ε/R and about
 * c·ln(R/ε) bits per value: the index grows with log R per value, the false reads do not grow at all.
 *
 * Bits per value of an SBBF climb fast at very low p (the spec's table: 26.4 at 1e-4, 41 at 1e-5), so p_i is
 * never made smaller than what `maxBitsPerValue` buys ([[FilterSizer.floorFpp]]); past that point the
 * expected false reads rise instead of the index size, and DESCRIBE says so.
 *
 * An explicit `fpp` still means a fixed p per row group; Databricks' `fpp` means a fixed p per *file*, shared
 * by its row groups in proportion to their rows.
 */
sealed trait FppPolicy extends Serializable { def describe: String }

object FppPolicy {
  final case class TableBudget(falseReadsPerKey: Double) extends FppPolicy {
    def describe: String = s"false_reads_per_key=$falseReadsPerKey"
  }
  final case class PerRowGroup(fpp: Double) extends FppPolicy { def describe: String = s"fpp=$fpp per row group" }
  final case class PerFile(fpp: Double) extends FppPolicy { def describe: String = s"fpp=$fpp per file" }

  val DefaultFalseReadsPerKey: Double = BloomConf.DefaultFalseReadsPerKey
  val DefaultMaxBitsPerValue: Double = BloomConf.DefaultMaxBitsPerValue
  /** A row group never gets a filter weaker than this, however large its share of the budget. */
  val MaxRowGroupFpp = 0.5
}

/**
 * The p_i of every filter of a build, shipped to the tasks. `valuesUpperBound` is N per budgeted column (see
 * [[FppPolicy]]); `floorFpp` the smallest p worth its bits.
 */
final case class FilterSizer(policies: Map[String, FppPolicy], valuesUpperBound: Map[String, Long],
                             maxBitsPerValue: Double) {
  val floorFpp: Double = FilterSizer.fppAtBitsPerValue(maxBitsPerValue)

  /** Target p for a row group of `ndv` distinct values and `rows` rows, in a file of `fileRows` rows. */
  def targetFpp(column: String, ndv: Long, rows: Long, fileRows: Long): Double = {
    val p = policies(column) match {
      case FppPolicy.PerRowGroup(f) => f
      case FppPolicy.PerFile(f) => if (fileRows <= 0) f else f * rows.toDouble / fileRows
      case FppPolicy.TableBudget(eps) =>
        val n = valuesUpperBound.getOrElse(column, 0L)
        if (n <= 0) eps else eps * math.max(ndv, 1L).toDouble / n
    }
    math.min(FppPolicy.MaxRowGroupFpp, math.max(p, floorFpp))
  }

  /**
   * Target p of the summary of a segment holding `values` distinct values over row groups whose filters'
   * FPPs sum to `leafFalse` (see [[sliced.Summaries]]). A value absent from the table reads the segment's row
   * groups in error with probability p_s · leafFalse, so under the table budget the segment gets its share
   * of ε in proportion to its values, ε_s = ε · values / N, and p_s = ε_s / leafFalse: the budget then holds
   * end to end where the row groups' filters alone are capped by `maxBitsPerValue` (past ~3,000 row groups).
   * The row groups' filters are sized as without summaries (a lookup of a present value still probes every
   * row group of its segment). Never weaker than [[FilterSizer.MaxSummaryFpp]], never stronger than the
   * ceiling buys. 1 (no summary) for a column not under the table budget.
   */
  def summaryFpp(column: String, values: Long, leafFalse: Double): Double = {
    val p = policies.get(column) match {
      case Some(FppPolicy.TableBudget(eps)) if leafFalse > 0 =>
        val n = valuesUpperBound.getOrElse(column, 0L)
        val share = if (n <= 0) eps else eps * math.min(1.0, math.max(values, 1L).toDouble / n)
        share / leafFalse
      case Some(FppPolicy.TableBudget(_)) => FilterSizer.MaxSummaryFpp
      case _ => return 1.0 // no summary
    }
    math.min(FilterSizer.MaxSummaryFpp, math.max(p, floorFpp))
  }
}

object FilterSizer {
  /**
   * The weakest summary: 4.8 bits per value, so that a lookup probes about a tenth of the segments that do
   * not hold its value even where the row groups' filters alone meet the budget (small tables), for at most
   * ~1.35x the bytes of the row groups' filters alone (`docs/hierarchy.md`).
   */
  val MaxSummaryFpp = 0.1

  /** The FPP an SBBF reaches with `bitsPerValue` bits per distinct value (Putze's model, [[Sizing.fpp]]). */
  def fppAtBitsPerValue(bitsPerValue: Double): Double = {
    require(bitsPerValue >= 1, s"bits per value must be >= 1, got $bitsPerValue")
    val values = 1000000L
    Sizing.fpp(math.round(values * bitsPerValue / 8 / Sbbf.BytesPerBlock) * Sbbf.BytesPerBlock, values)
  }
}

/** What one version's filters of one column cost and give, summed over its row groups. */
final case class ColumnStats(
    column: String,
    rowGroups: Long,
    sizeInBytes: Long,
    distinctValues: Long, // over row groups whose distinct count is known (built by scanning)
    bytesOfKnownDistinct: Long, // filter bytes of those row groups
    expectedFalseReadsPerKey: Double, // Σ over row groups of each stored filter's FPP
    rowGroupsAtCeiling: Long, // filters holding maxBitsPerValue bits per distinct value or more
    // The same for a key the table holds (besides its own row group); whole layouts only (ColumnStats.ofLayout)
    expectedFalseReadsPerPresentKey: Option[Double] = None) {
  def bytesPerValue: Option[Double] =
    if (distinctValues > 0) Some(bytesOfKnownDistinct.toDouble / distinctValues) else None
  /** The sum of two disjoint sets of row groups; the present-key figure, a property of a whole layout, is dropped. */
  def +(o: ColumnStats): ColumnStats = ColumnStats(column, rowGroups + o.rowGroups, sizeInBytes + o.sizeInBytes,
    distinctValues + o.distinctValues, bytesOfKnownDistinct + o.bytesOfKnownDistinct,
    expectedFalseReadsPerKey + o.expectedFalseReadsPerKey, rowGroupsAtCeiling + o.rowGroupsAtCeiling)
}

object ColumnStats {
  def zero(column: String): ColumnStats = ColumnStats(column, 0, 0, 0, 0, 0.0, 0)

  /**
   * One stored entry: `fpp` is its filter's false-positive probability measured from its bits (exact for a
   * uniform hash whatever was inserted, harvested filters included), 0 for a chunk of nulls only (never
   * matches a value), 1 for a chunk without a usable filter (always read). A filter of more than one block
   * with at least `maxBitsPerValue` bits per distinct value was capped by the ceiling.
   */
  def of(column: String, fpp: Double, bytes: Long, ndv: Long, maxBitsPerValue: Double): ColumnStats = {
    val known = ndv > 0 && bytes > 0
    val capped = known && bytes > Sbbf.BytesPerBlock && bytes * 8.0 >= maxBitsPerValue * ndv * 0.999
    ColumnStats(column, 1, bytes, if (known) ndv else 0, if (known) bytes else 0, fpp, if (capped) 1 else 0)
  }

  /**
   * Every row group of a layout's column. A row group is read in error only if its segment's summary also
   * says "maybe" ([[sliced.Summaries]]): for a key the table does not hold, its expected false reads are its
   * filter's FPP times the summary's (1 without a summary). The summaries' bytes count in the size.
   *
   * A key the table holds passes the summary of the segment holding it, so that segment's other row groups cost
   * their filters' FPPs undiscounted. With L_s the sum of segment s's row-group FPPs, p_s its summary's FPP and
   * A = Σ_s p_s·L_s (the absent-key figure), a key in row group i of segment s reads A + (1 - p_s)·L_s - p_i in
   * error; averaged over the keys, each row group weighted by its distinct values (its non-null values where that
   * count is unknown), that is `expectedFalseReadsPerPresentKey`.
   */
  def ofLayout(l: sliced.Layout, c: sliced.ColumnSlice, maxBitsPerValue: Double): ColumnStats = {
    var acc = zero(c.name)
    val sums = l.summaries
    // p_s: the FPP of segment s's summary, 1 without one (or without a segment)
    def summaryFpp(s: Int): Double = if (s < 0 || sums.summaryOf(s) < 0) 1.0 else sums.fpp(s).toDouble
    val leafFalse = new Array[Double](l.segments.length) // L_s
    var rg = 0
    while (rg < l.numRowGroups) {
      val s = c.segment(rg)
      val bytes = if (s < 0) 0L else l.segments(s).blocks * 32L
      if (s >= 0) leafFalse(s) += c.fpp(rg)
      acc = acc + of(c.name, c.fpp(rg).toDouble * summaryFpp(s), bytes, c.ndv(rg), maxBitsPerValue)
      rg += 1
    }
    // Σ_i w_i·((1 - p_s)·L_s - p_i) / Σ_i w_i, over the row groups holding values
    var weighted = 0.0; var weights = 0.0
    rg = 0
    while (rg < l.numRowGroups) {
      val w = (if (c.ndv(rg) > 0) c.ndv(rg) else c.nonNull(rg)).toDouble
      if (w > 0) {
        val s = c.segment(rg)
        val unsummarized = if (s < 0) 0.0 else (1.0 - summaryFpp(s)) * leafFalse(s)
        weighted += w * (unsummarized - c.fpp(rg)); weights += w
      }
      rg += 1
    }
    val present = if (weights > 0) math.max(0.0, acc.expectedFalseReadsPerKey + weighted / weights) else 0.0
    val summaryBytes = l.segments.indices.iterator.filter(s => l.segments(s).column == c.name && sums.summaryOf(s) >= 0)
      .map(s => sums.segments(sums.summaryOf(s)).blocks * 32L).sum
    acc.copy(sizeInBytes = acc.sizeInBytes + summaryBytes, expectedFalseReadsPerPresentKey = Some(present))
  }

  def sum(column: String, all: Iterable[ColumnStats]): ColumnStats = all.foldLeft(zero(column))(_ + _)
}
