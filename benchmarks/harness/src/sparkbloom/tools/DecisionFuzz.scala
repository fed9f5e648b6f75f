package sparkbloom.tools

import java.nio.ByteBuffer
import java.util.BitSet

import scala.collection.mutable
import scala.util.Random
import scala.util.control.NonFatal

import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.parquet.io.SeekableInputStream
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.expressions.{
  And, AttributeReference, EqualNullSafe, EqualTo, ExprId, Expression, GreaterThan, In, InSet, IsNull, Literal, Or
}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import sparkbloom.BloomConf
import sparkbloom.index.{IndexStore, IndexVersion}
import sparkbloom.index.sliced.{Probers, RunReader, SlicedProbe}
import sparkbloom.predicate.BloomPredicate
import sparkbloom.parquet.{FooterInfo, Footers}
import sparkbloom.scan.NativeFilters

/**
 * Decision-level differential fuzz of bloom-filter pruning: fast enough for millions of queries.
 *
 * For each table (a directory of Parquet files, or one file) it reads every row with Spark, maps each row to
 * its row group (`_metadata.row_index` against the footer's row counts) and keeps, per column, which row
 * groups hold each value, normalised by Spark's equality (-0.0 = 0.0, NaN = NaN, strings by bytes, decimals
 * by value) and which row groups hold a null. A query is a random AND/OR tree of `=`, `<=>`, `IN` (short,
 * and long as Spark's optimizer leaves them: `InSet`), `IS NULL`, `= NULL` and range atoms over one table,
 * with values present, absent and special (±0.0, NaN, extremes).
 *
 * Oracle: a row group MUST be kept when the tree, evaluated with "the atom holds for some row of this row
 * group", is true. A row that satisfies the condition makes every atom on its path true in its row group,
 * so this over-approximates the row groups holding a matching row; bloom pruning only answers "value absent
 * from this row group" and is monotone in that presence, so it can never legitimately prune a must-keep
 * row group. Atoms bloom filters cannot answer (ranges) count as holding everywhere.
 *
 * Checked per query, for every file of the table:
 *  - [[NativeFilters.decide]] over the whole file ([0, length)) with the predicate [[BloomPredicate.translate]]
 *    makes of the condition: every must-keep row group is in its kept ranges, and the ranges are whole row
 *    groups in file order;
 *  - every index of the table ([[SlicedProbe]] over the committed layout, as the planner probes it): every
 *    must-keep row group of a covered file may match; and the scan's combination (index, then native filters
 *    on the conjuncts no index answered) keeps them too;
 *  - every 8th query, the file cut into random splits: each row group is decided by exactly the split holding
 *    its midpoint, as over the whole file, and every other split keeps it;
 *  - every 61st query, the decision read from storage (`decide(conf, path, ...)`) equals the one made from the
 *    in-memory copy of the file the fuzz uses (footer and bytes cached, so a query costs microseconds); every
 *    16th, the index probed through the planner's own prober ([[Probers.forVersion]]: IndexCache, positioned
 *    reads) answers as the in-memory copy of its segments the fuzz probes otherwise.
 */
object DecisionFuzz {

  /** A Parquet file held in memory. `base`: the table-wide number of its first row group. */
  private final class FileData(val status: FileStatus, val bytes: Array[Byte], val footer: FooterInfo, val base: Int) {
    val numRgs: Int = footer.rowGroups.length
    val rgByStart: Map[Long, Int] = footer.rowGroups.map(r => r.start -> r.ordinal).toMap
    def path: Path = status.getPath
  }

  /** One column: value (normalised) → row groups holding it, row groups holding a null, distinct values. */
  private final class Column(val name: String, val dataType: DataType) {
    val attr: AttributeReference = AttributeReference(name, dataType)()
    val where = new java.util.HashMap[Any, BitSet]()
    val nulls = new BitSet()
    val present = mutable.ArrayBuffer[Any]()
    val seen = new java.util.HashSet[Any]()
  }

  /**
   * An index of the table, mapped onto the table's row groups. `prober` reads the runs from a copy of the
   * segments in memory (CRC-checked once, as [[sparkbloom.index.sliced.RunReader]] does); `stored` is the
   * planner's own prober (IndexCache, positioned reads), compared with it every 16th query.
   */
  private final class Index(val version: IndexVersion, val prober: SlicedProbe.Prober, val stored: SlicedProbe.Prober,
                            val columns: Seq[String], val toGlobal: Array[Int], val covered: BitSet,
                            val summaries: SlicedProbe.RunFetcher, val storedSummaries: SlicedProbe.RunFetcher)

  private final class Table(val root: String, val label: String, val files: Array[FileData], val numRgs: Int,
                            val rows: Long, val columns: Array[Column], val indexes: Seq[Index]) {
    val byExprId: Map[ExprId, String] = columns.map(c => c.attr.exprId -> c.name).toMap
    val byName: Map[String, Column] = columns.map(c => c.name -> c).toMap
  }

  private final class Counts {
    var queries, fileDecisions, rowGroupsDecided, mustKeep, nativePruned, nativeUndecided = 0L
    var indexDecided, indexMustKeep, indexPruned, combinedPruned, splitChecks, storageChecks, errors = 0L
    var queriesNativePruned, queriesIndexPruned = 0L
    def json: java.util.LinkedHashMap[String, AnyRef] = obj(
      "queries" -> queries, "file_decisions" -> fileDecisions, "row_groups_decided" -> rowGroupsDecided,
      "must_keep" -> mustKeep, "prunable" -> (rowGroupsDecided - mustKeep),
      "native_pruned" -> nativePruned, "native_undecided_files" -> nativeUndecided,
      "native_pruned_of_prunable" -> ratio(nativePruned, rowGroupsDecided - mustKeep),
      "queries_native_pruned" -> queriesNativePruned,
      "index_row_groups_decided" -> indexDecided, "index_pruned" -> indexPruned,
      "index_pruned_of_prunable" -> ratio(indexPruned, indexDecided - indexMustKeep),
      "queries_index_pruned" -> queriesIndexPruned, "combined_pruned" -> combinedPruned,
      "split_checks" -> splitChecks, "storage_checks" -> storageChecks, "errors" -> errors)
  }

  /**
   * Fuzzes `queries` queries (query q uses table q mod tables and its own random generator from `seed` and q)
   * over the tables at `paths` (directories of Parquet files, or files); a JSON summary: per table and in
   * total, row groups decided, must-keep, pruned (native, index), mismatches and their reproducers.
   */
  def run(spark: SparkSession, paths: java.util.List[String], queries: Int, seed: Long): String =
    run(spark, paths, queries, seed, 20)

  def run(spark: SparkSession, paths: java.util.List[String], queries: Int, seed: Long, maxReproducers: Int): String = {
    import scala.jdk.CollectionConverters._
    val t0 = System.nanoTime()
    val tables = paths.asScala.toSeq.map(p => load(spark, p))
    val loadMs = (System.nanoTime() - t0) / 1000000L
    val opts = NativeFilters.Options(caseSensitive = false, int96Probes = true)
    val conf = spark.sessionState.newHadoopConf()
    val perTable = tables.map(_ => new Counts)
    val total = new Counts
    val reproducers = mutable.ArrayBuffer[String]()
    var mismatches = 0L
    def fail(msg: => String): Unit = { mismatches += 1; if (reproducers.size < maxReproducers) reproducers += msg }
    val t1 = System.nanoTime()
    var q = 0
    while (q < queries && tables.nonEmpty) {
      val ti = q % tables.size
      val t = tables(ti)
      val c = perTable(ti)
      val rng = new Random(seed * 1000003L + q)
      val where = s"seed=$seed query=$q table=${t.root}"
      var expr: Expression = null
      try {
        expr = tree(rng, t, 3)
        checkQuery(t, expr, rng, q, opts, conf, c, where, fail(_))
      } catch {
        case NonFatal(e) =>
          c.errors += 1
          fail(s"ERROR $where predicate=[${Option(expr).map(_.sql).orNull}]: $e")
      }
      c.queries += 1
      q += 1
    }
    val fuzzMs = (System.nanoTime() - t1) / 1000000L
    perTable.foreach(add(total, _))
    val out = obj(
      "seed" -> seed, "queries" -> queries.toLong, "mismatches" -> mismatches,
      "load_ms" -> loadMs, "fuzz_ms" -> fuzzMs,
      "queries_per_second" -> (if (fuzzMs > 0) queries * 1000.0 / fuzzMs else 0.0),
      "total" -> total.json,
      "tables" -> list(tables.zip(perTable).map { case (t, c) =>
        val m = c.json
        m.put("path", t.root); m.put("writer", t.label); m.put("files", Int.box(t.files.length))
        m.put("row_groups", Int.box(t.numRgs)); m.put("rows", Long.box(t.rows))
        m.put("chunks_with_native_filters", Long.box(t.files.iterator.map(nativeChunks).sum))
        m.put("columns", list(t.columns.toSeq.map(x => s"${x.name} ${x.dataType.sql}")))
        m.put("indexes", list(t.indexes.map(i => s"${i.version.meta.name} (${i.columns.mkString(", ")})")))
        m
      }),
      "reproducers" -> list(reproducers.toSeq))
    IndexStore.mapper.writeValueAsString(out)
  }

  // ---------------------------------------------------------------- one query

  private def checkQuery(t: Table, expr: Expression, rng: Random, q: Int, opts: NativeFilters.Options,
                         conf: org.apache.hadoop.conf.Configuration, c: Counts, where: String, fail: String => Unit)
      : Unit = {
    val must = mustKeep(expr, t)
    val all = BloomPredicate.translate(expr, id => t.byExprId.get(id))
    val nativeKept = new BitSet(t.numRgs)
    var pruned = false
    for (f <- t.files) {
      val d = NativeFilters.decide(new BytesStream(f.bytes), f.bytes.length.toLong, f.footer, 0L, f.bytes.length.toLong,
        all, opts)
      val kept = keptOf(f, d, s"$where file=${f.path}", fail)
      c.fileDecisions += 1
      c.rowGroupsDecided += f.numRgs
      if (d.isEmpty) c.nativeUndecided += 1
      d.foreach { x =>
        if (x.considered != f.numRgs || x.kept != kept.cardinality())
          fail(
            s"BAD DECISION $where file=${f.path} predicate=[${expr.sql}]: considered ${x.considered} of ${f.numRgs}, " +
              s"kept ${x.kept} but ${kept.cardinality()} ranges")
      }
      var rg = 0
      while (rg < f.numRgs) {
        val m = must.get(f.base + rg)
        if (m) c.mustKeep += 1
        if (kept.get(rg)) nativeKept.set(f.base + rg)
        else {
          c.nativePruned += 1; pruned = true
          if (m) fail(s"MISSED ROWS (native filters) $where file=${f.path} row_group=$rg writer=${t.label}\n" +
            s"  predicate: ${expr.sql}\n  bloom predicate: ${all.sql}\n  must keep: ${bits(must, f)} kept: $kept")
        }
        rg += 1
      }
      if (q % 8 == 0) {
        checkSplits(f, all, opts, kept, d.isDefined, rng, s"$where file=${f.path} predicate=[${expr.sql}]", fail);
        c.splitChecks += 1
      }
      if (q % 61 == 0) {
        val stored = NativeFilters.decide(conf, f.path, 0L, f.bytes.length.toLong, all, opts)
        c.storageChecks += 1
        if (stored.map(_.ranges.toSeq) != d.map(_.ranges.toSeq) || stored.map(_.invalid) != d.map(_.invalid))
          fail(
            s"STORAGE DIFFERS $where file=${f.path} predicate=[${expr.sql}]: from storage " +
              s"${stored.map(_.ranges.mkString(","))}, " +
              s"in memory ${d.map(_.ranges.mkString(","))}")
      }
    }
    if (pruned) c.queriesNativePruned += 1

    if (t.indexes.nonEmpty) {
      // Every index that answers part of the condition, ANDed (as BloomSkippingFileIndex); files covered by
      // none of them are read whole.
      val answering = t.indexes.flatMap { ix =>
        val pred = BloomPredicate.translate(expr,
          id =>
            t.byExprId.get(id).flatMap(n =>
              ix.columns.find(_ == n)
                .orElse(ix.columns.find(_.equalsIgnoreCase(n)))))
        if (pred == BloomPredicate.Unknown) None else Some(ix -> pred)
      }
      val indexKept = new BitSet(t.numRgs); indexKept.set(0, t.numRgs)
      val decided = new BitSet(t.numRgs)
      for ((ix, pred) <- answering) {
        val b = new SlicedProbe(ix.version.layout, ix.prober, summaryRuns = ix.summaries).mightMatch(pred)
        if (q % 16 == 0) {
          val fromStorage =
            new SlicedProbe(ix.version.layout, ix.stored, summaryRuns = ix.storedSummaries).mightMatch(pred)
          c.storageChecks += 1
          if (fromStorage != b)
            fail(s"STORAGE DIFFERS (index ${ix.version.meta.name}) $where predicate=[${expr.sql}]: " +
              s"planner's prober $fromStorage, in memory $b")
        }
        val says = new BitSet(t.numRgs); says.set(0, t.numRgs)
        var lrg = 0
        while (lrg < ix.toGlobal.length) {
          val g = ix.toGlobal(lrg)
          if (g >= 0 && !b.get(lrg)) says.clear(g)
          lrg += 1
        }
        indexKept.and(says)
        decided.or(ix.covered)
      }
      if (answering.nonEmpty) {
        val indexedCols = answering.flatMap(_._1.columns.map(_.toLowerCase(java.util.Locale.ROOT))).toSet
        val covered = BloomPredicate.translate(expr,
          id => t.byExprId.get(id).filterNot(n => indexedCols.contains(n.toLowerCase(java.util.Locale.ROOT))))
        var ixPruned = false
        for (f <- t.files) {
          val nativeOnCovered = if (!NativeFilters.prunable(covered)) None
          else NativeFilters.decide(new BytesStream(f.bytes), f.bytes.length.toLong, f.footer, 0L,
            f.bytes.length.toLong, covered, opts)
          val keptCovered = keptOf(f, nativeOnCovered, s"$where file=${f.path} (covered)", fail)
          var rg = 0
          while (rg < f.numRgs) {
            val g = f.base + rg
            if (decided.get(g)) {
              c.indexDecided += 1
              if (must.get(g)) c.indexMustKeep += 1
              val ixKeeps = indexKept.get(g)
              if (!ixKeeps) { c.indexPruned += 1; ixPruned = true }
              val combined = ixKeeps && keptCovered.get(rg)
              if (!combined) c.combinedPruned += 1
              if (must.get(g) && !ixKeeps)
                fail(
                  s"MISSED ROWS (index ${answering.map(_._1.version.meta.name).mkString(",")}) $where file=${f.path} " +
                    s"row_group=$rg writer=${t.label}\n" +
                    s"  predicate: ${expr.sql}\n  index predicates: ${answering.map(_._2.sql).mkString(" AND ")}")
              else if (must.get(g) && !combined)
                fail(
                  s"MISSED ROWS (index + native filters on ${covered.sql}) $where file=${f.path} row_group=$rg\n  " +
                    s"predicate: ${expr.sql}")
            }
            rg += 1
          }
        }
        if (ixPruned) c.queriesIndexPruned += 1
      }
    }
  }

  /** The row groups of `f` a decision keeps (all of them for None); checks its ranges are whole row groups in order. */
  private def keptOf(f: FileData, d: Option[NativeFilters.Decision], where: String, fail: String => Unit): BitSet = {
    val kept = new BitSet(f.numRgs)
    d match {
      case None => kept.set(0, f.numRgs)
      case Some(x) =>
        val r = x.ranges
        var i = 0; var last = -1
        while (i + 1 < r.length) {
          f.rgByStart.get(r(i)) match {
            case Some(rg) if f.footer.rowGroups(rg).end == r(i + 1) && rg > last => kept.set(rg); last = rg
            case _ =>
              fail(s"BAD RANGES $where: [${r(i)}, ${r(i + 1)}) is not the next row group; ranges ${r.mkString(",")}")
          }
          i += 2
        }
        if (r.length % 2 != 0) fail(s"BAD RANGES $where: odd length ${r.length}")
    }
    kept
  }

  /** Random splits of the file: each row group decided by the split holding its midpoint, as over the whole file. */
  private def checkSplits(f: FileData, pred: BloomPredicate, opts: NativeFilters.Options, whole: BitSet,
                          decidable: Boolean,
                          rng: Random, where: String, fail: String => Unit): Unit = {
    val len = f.bytes.length.toLong
    val cuts = (Seq.fill(1 + rng.nextInt(4))(1L + (rng.nextDouble() * (len - 1)).toLong) :+ 0L :+ len).distinct.sorted
    var considered = 0
    cuts.sliding(2).foreach { w =>
      val s = w(0); val e = w(1)
      val d = NativeFilters.decide(new BytesStream(f.bytes), len, f.footer, s, e, pred, opts)
      if (d.isDefined != decidable) fail(s"SPLIT $where [$s, $e): decided ${d.isDefined}, whole file $decidable")
      val kept = keptOf(f, d, s"$where split [$s, $e)", fail)
      considered += d.map(_.considered).getOrElse(0)
      for (rg <- 0 until f.numRgs) {
        val b = f.footer.blocks(rg)
        val mid = b.getStartingPos + b.getCompressedSize / 2
        val inSplit = mid >= s && mid < e
        if (inSplit && kept.get(rg) != whole.get(rg))
          fail(s"SPLIT $where [$s, $e): row group $rg kept=${kept.get(rg)}, over the whole file ${whole.get(rg)}")
        if (!inSplit && !kept.get(rg)) fail(s"SPLIT $where [$s, $e): row group $rg outside the split was dropped")
      }
    }
    if (decidable && considered != f.numRgs)
      fail(s"SPLIT $where: ${considered} row groups considered over the splits, not ${f.numRgs}")
  }

  private def bits(must: BitSet, f: FileData): String = (0 until f.numRgs).filter(rg => must.get(f.base + rg)).mkString(
    "{", ", ", "}")

  // ---------------------------------------------------------------- the oracle

  /** Row groups of the table that must be kept for `e` (see the class comment). */
  private def mustKeep(e: Expression, t: Table): BitSet = e match {
    case And(l, r) => val a = mustKeep(l, t); a.and(mustKeep(r, t)); a
    case Or(l, r) => val a = mustKeep(l, t); a.or(mustKeep(r, t)); a
    case EqualTo(a: AttributeReference, Literal(v, _)) => holding(t, a, v)
    case EqualTo(Literal(v, _), a: AttributeReference) => holding(t, a, v)
    case EqualNullSafe(a: AttributeReference, Literal(null, _)) => t.byName(a.name).nulls.clone().asInstanceOf[BitSet]
    case EqualNullSafe(a: AttributeReference, Literal(v, _)) => holding(t, a, v)
    case In(a: AttributeReference, list) =>
      val out = new BitSet(t.numRgs);
      list.foreach { case Literal(v, _) => out.or(holding(t, a, v)); case _ => out.set(0, t.numRgs) }; out
    case InSet(a: AttributeReference, set) =>
      val out = new BitSet(t.numRgs); set.foreach(v => out.or(holding(t, a, v))); out
    case IsNull(a: AttributeReference) => t.byName(a.name).nulls.clone().asInstanceOf[BitSet]
    case _ => val out = new BitSet(t.numRgs); out.set(0, t.numRgs); out // not answerable by bloom filters
  }

  private def holding(t: Table, a: AttributeReference, v: Any): BitSet =
    if (v == null) new BitSet(t.numRgs)
    else Option(t.byName(a.name).where.get(normalise(v, a.dataType))).map(_.clone().asInstanceOf[BitSet]).getOrElse(
      new BitSet(t.numRgs))

  /**
   * A key equal for values Spark's `=` finds equal. Floating values become their bits (NaN canonical, -0.0 as
   * 0.0) times an odd constant (a bijection): boxed Float/Double hash round numbers into few hash buckets.
   */
  private def normalise(v: Any, dt: DataType): Any = (v, dt) match {
    case (f: Float, _) =>
      java.lang.Integer.valueOf(java.lang.Float.floatToIntBits(if (f == 0.0f) 0.0f else f) * 0x9e3779b9)
    case (d: Double, _) =>
      java.lang.Long.valueOf(java.lang.Double.doubleToLongBits(if (d == 0.0d) 0.0d else d) * 0x9e3779b97f4a7c15L)
    case (d: Decimal, _) => d.toJavaBigDecimal.stripTrailingZeros()
    case (b: Array[Byte], _) => ByteBuffer.wrap(b)
    case (x, _) => x
  }

  /** The key of a value as written (both zeros and NaN distinct from others), for the list of present values. */
  private def raw(v: Any): Any = v match {
    case b: Array[Byte] => ByteBuffer.wrap(b)
    case d: Decimal => d.toJavaBigDecimal
    case x => x
  }

  // ---------------------------------------------------------------- random conditions

  private def tree(rng: Random, t: Table, depth: Int): Expression =
    if (depth == 0 || rng.nextInt(3) == 0) atom(rng, t)
    else if (rng.nextBoolean()) And(tree(rng, t, depth - 1), tree(rng, t, depth - 1))
    else Or(tree(rng, t, depth - 1), tree(rng, t, depth - 1))

  private def atom(rng: Random, t: Table): Expression = {
    val c = t.columns(rng.nextInt(t.columns.length))
    def lit(v: Any) = Literal(v, c.dataType)
    val x = rng.nextInt(100)
    if (x < 35) { val v = lit(value(rng, c)); if (rng.nextInt(8) == 0) EqualTo(v, c.attr) else EqualTo(c.attr, v) }
    else if (x < 45) EqualNullSafe(c.attr, if (rng.nextInt(4) == 0) lit(null) else lit(value(rng, c)))
    else if (x < 60)
      In(c.attr, Seq.fill(2 + rng.nextInt(9))(if (rng.nextInt(20) == 0) lit(null) else lit(value(rng, c))))
    else if (x < 80) {
      val vs = Seq.fill(11 + rng.nextInt(60))(value(rng, c))
      // Spark's optimizer turns an IN of more than spark.sql.optimizer.inSetConversionThreshold (10) literals into
      // InSet.
      if (rng.nextBoolean()) InSet(c.attr, vs.toSet) else In(c.attr, vs.map(lit))
    } else if (x < 88) IsNull(c.attr)
    else if (x < 91) EqualTo(c.attr, lit(null))
    else if (x < 95) GreaterThan(c.attr, lit(value(rng, c)))
    else EqualTo(c.attr, lit(special(rng, c.dataType)))
  }

  /** A value of the column's type: present 55%, absent (near a present one or anywhere) 33%, special 12%. */
  private def value(rng: Random, c: Column): Any = {
    val x = rng.nextInt(100)
    if (x < 55 && c.present.nonEmpty) c.present(rng.nextInt(c.present.size))
    else if (x < 88) absent(rng, c)
    else special(rng, c.dataType)
  }

  private def absent(rng: Random, c: Column): Any = {
    val near = if (c.present.nonEmpty && rng.nextBoolean()) Some(c.present(rng.nextInt(c.present.size))) else None
    c.dataType match {
      case ByteType => near.map(v => (v.asInstanceOf[Byte] + 1).toByte).getOrElse(rng.nextInt(256).toByte)
      case ShortType => near.map(v => (v.asInstanceOf[Short] + 1).toShort).getOrElse(rng.nextInt(65536).toShort)
      case IntegerType | DateType => near.map(v => v.asInstanceOf[Int] + 1 + rng.nextInt(3)).getOrElse(
          if (c.dataType == DateType) rng.nextInt(80000) - 20000 else rng.nextInt())
      case LongType | TimestampType | TimestampNTZType =>
        near.map(v => v.asInstanceOf[Long] + 1 + rng.nextInt(3)).getOrElse(rng.nextLong())
      case FloatType => near.map(v => v.asInstanceOf[Float] + 0.0625f).getOrElse((rng.nextGaussian() * 1000).toFloat)
      case DoubleType => near.map(v => v.asInstanceOf[Double] + 0.125).getOrElse(rng.nextGaussian() * 1000)
      case _: StringType =>
        near.map(v => UTF8String.fromString(v.toString + (if (rng.nextBoolean()) "x" else " "))).getOrElse(
          UTF8String.fromString(rng.alphanumeric.take(rng.nextInt(12)).mkString))
      case BinaryType => Array.fill(rng.nextInt(8))(rng.nextInt(256).toByte)
      case BooleanType => rng.nextBoolean()
      case d: DecimalType =>
        val limit = math.pow(10, math.min(d.precision, 18)).toLong // |unscaled| < 10^precision
        val unscaled =
          near.map(v => v.asInstanceOf[Decimal].toJavaBigDecimal.setScale(d.scale).unscaledValue().longValue() + 1)
            .getOrElse(rng.nextLong()) % limit
        Decimal(java.math.BigDecimal.valueOf(unscaled, d.scale), d.precision, d.scale)
      case _ => null
    }
  }

  private def special(rng: Random, dt: DataType): Any = dt match {
    case FloatType => Seq(0.0f, -0.0f, Float.NaN, Float.PositiveInfinity, Float.MinPositiveValue, -1.0f)(rng.nextInt(6))
    case DoubleType => Seq(0.0d, -0.0d, Double.NaN, Double.NegativeInfinity, Double.MaxValue, -1.0d)(rng.nextInt(6))
    case IntegerType => Seq(0, -1, Int.MaxValue, Int.MinValue)(rng.nextInt(4))
    case LongType => Seq(0L, -1L, Long.MaxValue, Long.MinValue)(rng.nextInt(4))
    case DateType => Seq(0, -1, 2932896, -719162)(rng.nextInt(4)) // 1970-01-01, 1969-12-31, 9999-12-31, 0001-01-01
    case _: StringType => UTF8String.fromString(Seq("", " ", "ключ", "\u0000", "k")(rng.nextInt(5)))
    case d: DecimalType =>
      val max = java.math.BigDecimal.TEN.pow(d.precision - d.scale).subtract(java.math.BigDecimal.valueOf(1, d.scale))
      Decimal(Seq(java.math.BigDecimal.ZERO.setScale(d.scale), max, max.negate())(rng.nextInt(3)), d.precision, d.scale)
    case other => null
  }

  // ---------------------------------------------------------------- loading

  private val Supported: DataType => Boolean = {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType | BinaryType | BooleanType =>
      true
    case TimestampType | TimestampNTZType => true
    case s: StringType => s == StringType
    case _: DecimalType => true
    case _ => false
  }

  private def load(spark: SparkSession, p: String): Table = {
    val conf = spark.sessionState.newHadoopConf()
    val path = new Path(p)
    val fs = path.getFileSystem(conf)
    val root = fs.makeQualified(path)
    val statuses: Array[FileStatus] =
      if (fs.getFileStatus(root).isFile) Array(fs.getFileStatus(root))
      else {
        val out = mutable.ArrayBuffer[FileStatus]()
        def walk(d: Path): Unit = fs.listStatus(d).sortBy(_.getPath.getName).foreach { st =>
          val n = st.getPath.getName
          if (!n.startsWith("_") && !n.startsWith(".")) {
            if (st.isDirectory) walk(st.getPath) else if (n.endsWith(".parquet")) out += st
          }
        }
        walk(root)
        out.toArray
      }
    var base = 0
    val files = statuses.map { st =>
      val footer = Footers.read(conf, st.getPath)
      val in = fs.open(st.getPath)
      val bytes = try { val b = new Array[Byte](st.getLen.toInt); in.readFully(0L, b); b }
      finally in.close()
      val f = new FileData(st, bytes, footer, base)
      base += f.numRgs
      f
    }
    val numRgs = base
    val df = spark.read.parquet(statuses.map(_.getPath.toString).toIndexedSeq: _*)
    val cols = df.schema.fields.filter(f => Supported(f.dataType)).map(f => new Column(f.name, f.dataType))
    val conv = cols.map(c => CatalystTypeConverters.createToCatalystConverter(c.dataType))
    val rows = df.select((cols.map(c => col(s"`${c.name}`")) :+ col("_metadata.file_path") :+
        col("_metadata.row_index")).toSeq: _*).collect()
    val byPath = files.map(f => f.path.toUri.getPath -> f).toMap
    val rowCounts = files.map(f => f.footer.rowGroups.map(_.numRows).scanLeft(0L)(_ + _).toArray)
    val fileNo = files.zipWithIndex.map { case (f, i) => f -> i }.toMap
    for (r <- rows) {
      val f = byPath(new Path(new java.net.URI(r.getString(cols.length))).toUri.getPath)
      val idx = r.getLong(cols.length + 1)
      val starts = rowCounts(fileNo(f))
      var rg = 0
      while (rg + 1 < starts.length && idx >= starts(rg + 1)) rg += 1
      require(idx < starts.last, s"row index $idx past the ${starts.last} rows of ${f.path}")
      val g = f.base + rg
      var i = 0
      while (i < cols.length) {
        val c = cols(i)
        val v = conv(i)(r.get(i))
        if (v == null) c.nulls.set(g)
        else {
          val k = normalise(v, c.dataType)
          var b = c.where.get(k)
          if (b == null) { b = new BitSet(numRgs); c.where.put(k, b) }
          b.set(g)
          if (c.seen.add(raw(v))) c.present += v
        }
        i += 1
      }
    }
    val expected = files.iterator.map(_.footer.rowGroups.iterator.map(_.numRows).sum).sum
    require(rows.length.toLong == expected, s"$p: Spark read ${rows.length} rows, the footers say $expected")
    val indexes = loadIndexes(spark, root, files, numRgs)
    val label = files.headOption.map(_.footer.createdBy).getOrElse("(no files)")
    new Table(root.toString, label, files, numRgs, rows.length.toLong, cols, indexes)
  }

  private def loadIndexes(spark: SparkSession, root: Path, files: Array[FileData], numRgs: Int): Seq[Index] = {
    val conf = spark.sessionState.newHadoopConf()
    val fs = root.getFileSystem(conf)
    val base = IndexStore.indexesDir(root, BloomConf.indexRoot(spark))
    if (!fs.exists(base)) Nil
    else fs.listStatus(base).toSeq.filter(_.isDirectory).sortBy(_.getPath.getName).flatMap { st =>
      IndexStore.latestMeta(fs, st.getPath)._1.map { meta =>
        val v = IndexStore.load(fs, conf, st.getPath, meta)
        val l = v.layout
        val toGlobal = Array.fill(l.numRowGroups)(-1)
        val covered = new BitSet(numRgs)
        for (f <- files) {
          val fno = v.coveredFile(f.status.getPath.toString, f.status.getLen, f.status.getModificationTime)
          if (fno >= 0) {
            var lrg = l.firstRg(fno)
            while (lrg < l.firstRg(fno + 1)) {
              val ord = l.rgOrdinal(lrg)
              require(l.rgRows(lrg) == f.footer.rowGroups(ord).numRows,
                s"index ${meta.name}: row group $ord of ${f.path} has ${l.rgRows(lrg)} rows in the index, " +
                  s"${f.footer.rowGroups(ord).numRows} in the file")
              toGlobal(lrg) = f.base + ord
              covered.set(f.base + ord)
              lrg += 1
            }
          }
        }
        new Index(v, memoryProber(fs, v), Probers.forVersion(spark, v, new Probers.Counters), meta.columns.map(_.name),
          toGlobal, covered, memorySummaries(fs, v), Probers.summaries(spark, v, new Probers.Counters))
      }
    }
  }

  /** The summaries' runs, read once from storage (CRC-checked) and then served from memory. */
  private def memorySummaries(fs: org.apache.hadoop.fs.FileSystem, v: IndexVersion): SlicedProbe.RunFetcher = {
    val runs = v.layout.summaries.segments.map { seg =>
      seg.file ->
        (if (v.damaged.contains(seg.file)) Map.empty[Int, Option[Array[Byte]]]
         else RunReader.read(RunReader.withoutChecksumFiles(fs), new Path(v.dir, seg.file), seg,
           0 until seg.blocks))
    }.toMap
    (seg, blocks) => blocks.map(b => b -> runs.get(seg.file).flatMap(_.get(b)).flatten).toMap
  }

  /** Probes runs held in memory: each run of each segment read and CRC-checked once (None: damaged). */
  private def memoryProber(fs: org.apache.hadoop.fs.FileSystem, v: IndexVersion): SlicedProbe.Prober = {
    val runs: Map[String, Array[Option[Array[Byte]]]] = v.layout.segments.map { seg =>
      seg.file ->
        (if (v.damaged.contains(seg.file)) Array.fill[Option[Array[Byte]]](seg.blocks)(None)
         else v.memorySegments.get(seg.file) match {
           case Some(bytes) => Array.tabulate[Option[Array[Byte]]](seg.blocks)(b =>
               Some(java.util.Arrays.copyOfRange(bytes, seg.runOffset(b).toInt, seg.runOffset(b).toInt + seg.runBytes)))
           case None =>
             val read = RunReader.read(RunReader.withoutChecksumFiles(fs),
               new Path(v.dir, seg.file), seg, 0 until seg.blocks)
             Array.tabulate[Option[Array[Byte]]](seg.blocks)(b => read.getOrElse(b, None))
         })
    }.toMap
    requests =>
      requests.map { r =>
        val segRuns = runs(r.segment.file)
        r.segmentIndex -> SlicedProbe.probeRuns(r.segment, r.hashes, blocks => blocks.map(b => b -> segRuns(b)).toMap)
      }.toMap
  }

  private def nativeChunks(f: FileData): Long =
    f.footer.blocks.iterator.map(b => {
      import scala.jdk.CollectionConverters._; b.getColumns.asScala.count(_.getBloomFilterOffset >= 0).toLong
    }).sum

  private def add(into: Counts, c: Counts): Unit = {
    into.queries += c.queries; into.fileDecisions += c.fileDecisions; into.rowGroupsDecided += c.rowGroupsDecided
    into.mustKeep += c.mustKeep; into.nativePruned += c.nativePruned; into.nativeUndecided += c.nativeUndecided
    into.indexDecided += c.indexDecided; into.indexMustKeep += c.indexMustKeep; into.indexPruned += c.indexPruned
    into.combinedPruned += c.combinedPruned; into.splitChecks += c.splitChecks; into.storageChecks += c.storageChecks
    into.errors += c.errors; into.queriesNativePruned += c.queriesNativePruned;
    into.queriesIndexPruned += c.queriesIndexPruned
  }

  private def ratio(a: Long, b: Long): java.lang.Double = if (b == 0) null else java.lang.Double.valueOf(a.toDouble / b)

  private def obj(fields: (String, Any)*): java.util.LinkedHashMap[String, AnyRef] = {
    val m = new java.util.LinkedHashMap[String, AnyRef]()
    fields.foreach { case (k, v) => m.put(k, v.asInstanceOf[AnyRef]) }
    m
  }

  private def list(xs: Seq[AnyRef]): java.util.ArrayList[AnyRef] = {
    val l = new java.util.ArrayList[AnyRef](); xs.foreach(l.add); l
  }

  /** A file's bytes as a [[SeekableInputStream]] (what [[NativeFilters.decide]] reads filters through). */
  private final class BytesStream(bytes: Array[Byte]) extends SeekableInputStream {
    private var pos = 0
    override def getPos: Long = pos
    override def seek(p: Long): Unit = {
      if (p < 0 || p > bytes.length) throw new java.io.EOFException(s"seek to $p in ${bytes.length} bytes")
      pos = p.toInt
    }
    override def read(): Int = if (pos >= bytes.length) -1 else { val b = bytes(pos) & 0xff; pos += 1; b }
    override def read(b: Array[Byte], off: Int, len: Int): Int =
      if (len == 0) 0
      else if (pos >= bytes.length) -1
      else { val n = math.min(len, bytes.length - pos); System.arraycopy(bytes, pos, b, off, n); pos += n; n }
    override def readFully(b: Array[Byte]): Unit = readFully(b, 0, b.length)
    override def readFully(b: Array[Byte], off: Int, len: Int): Unit = {
      if (len > bytes.length - pos) throw new java.io.EOFException(s"$len bytes at $pos of ${bytes.length}")
      System.arraycopy(bytes, pos, b, off, len); pos += len
    }
    override def read(buf: ByteBuffer): Int = {
      if (!buf.hasRemaining) 0
      else if (pos >= bytes.length) -1
      else { val n = math.min(buf.remaining(), bytes.length - pos); buf.put(bytes, pos, n); pos += n; n }
    }
    override def readFully(buf: ByteBuffer): Unit = {
      if (buf.remaining() > bytes.length - pos)
        throw new java.io.EOFException(s"${buf.remaining()} bytes at $pos of ${bytes.length}")
      val n = buf.remaining(); buf.put(bytes, pos, n); pos += n
    }
  }
}
