package sparkbloom.predicate

import org.apache.spark.sql.catalyst.expressions.{And, Expression, InSet, Literal}
import org.apache.spark.sql.sources
import org.apache.spark.sql.types.{ArrayType, DataType, DoubleType, FloatType, MapType, StructType}

/** What a filter condition allows a scan to prune by, and which of parquet-java's own levels it must guard. */
object Conditions {

  /**
   * The conjuncts of `cond` before its first non-deterministic one (what Spark itself pushes to a scan): pruning
   * on the others would change which rows a non-deterministic conjunct sees.
   */
  def pushable(cond: Expression): Expression = {
    def split(e: Expression): Seq[Expression] = e match {
      case And(l, r) => split(l) ++ split(r)
      case other => Seq(other)
    }
    split(cond).takeWhile(_.deterministic).reduceOption(And).getOrElse(Literal.TrueLiteral)
  }

  /** Whether `cond` holds a float or double NaN literal. */
  def comparesWithNaN(cond: Expression): Boolean = cond.exists {
    case Literal(v: Double, _) => v.isNaN
    case Literal(v: Float, _) => v.isNaN
    case InSet(_, set) => set.exists {
        case d: Double => d.isNaN
        case f: Float => f.isNaN
        case _ => false
      }
    case _ => false
  }

  /** Whether `cond` holds a float or double literal equal to zero (either sign). */
  def comparesWithFloatingZero(cond: Expression): Boolean = cond.exists {
    case Literal(v: Double, _) => v == 0.0d
    case Literal(v: Float, _) => v == 0.0f
    case InSet(_, set) => set.exists {
        case d: Double => d == 0.0d
        case f: Float => f == 0.0f
        case _ => false
      }
    case _ => false
  }

  /** Whether `cond` references a column of float or double type, or of a type holding one (a struct, array, map). */
  def namesFloatingColumn(cond: Expression): Boolean = {
    def floating(t: DataType): Boolean = t match {
      case FloatType | DoubleType => true
      case s: StructType => s.fields.exists(f => floating(f.dataType))
      case a: ArrayType => floating(a.elementType)
      case m: MapType => floating(m.keyType) || floating(m.valueType)
      case _ => false
    }
    cond.references.exists(a => floating(a.dataType))
  }

  /**
   * The float and double columns on which the pushed-down filters `filters` (what Spark hands parquet-java) can
   * be true for a NaN value: those whose rows parquet-java's statistics and page-index filters may drop wrongly in
   * a file whose writer left NaN out of min/max (Arrow C++, arrow-rs). In Spark NaN equals NaN and is greater
   * than every other value, so `c > v`, `c >= v`, `c <> v`, `NOT (c <= v)`, `c NOT IN (...)` and `c = NaN` hold
   * for a NaN `c`; `c < v`, `c <= v`, `c = v`, `c IN (...)` (v not NaN) do not. Each comparison is judged with the
   * polarity the `NOT`s above it give it: a row group is dropped only when the filter is false for every value the
   * statistics allow, so a NaN row can only be lost through a comparison that is true for it, and in negation
   * normal form a filter none of whose comparisons holds for NaN is not true on a NaN row either. A column is
   * float or double when the filter's value is a `Float` or `Double` (Spark only pushes values of the column's
   * type); null checks use null counts, not min/max, and are never at risk. Anything unrecognised on a float or
   * double value counts as at risk.
   */
  def nanSensitiveColumns(filters: Seq[sources.Filter]): Set[String] = {
    def floating(v: Any): Boolean = v.isInstanceOf[java.lang.Double] || v.isInstanceOf[java.lang.Float]
    def nan(v: Any): Boolean = v match {
      case d: java.lang.Double => d.isNaN
      case f: java.lang.Float => f.isNaN
      case _ => false
    }
    // A comparison of one column with one value: the column, the value, and its result for a NaN column value
    // given a non-null value (None for a null value: a null result, never true under NOT either).
    def comparison(f: sources.Filter): Option[(String, Any, Any => Boolean)] = f match {
      case sources.EqualTo(a, v) => Some((a, v, nan))
      case sources.EqualNullSafe(a, v) => Some((a, v, nan))
      case sources.GreaterThan(a, v) => Some((a, v, x => !nan(x)))
      case sources.GreaterThanOrEqual(a, v) => Some((a, v, _ => true))
      case sources.LessThan(a, v) => Some((a, v, _ => false))
      case sources.LessThanOrEqual(a, v) => Some((a, v, nan))
      case _ => None
    }
    def walk(f: sources.Filter, positive: Boolean): Set[String] = f match {
      case sources.And(l, r) => walk(l, positive) ++ walk(r, positive)
      case sources.Or(l, r) => walk(l, positive) ++ walk(r, positive)
      case sources.Not(c) => walk(c, !positive)
      case _: sources.IsNull | _: sources.IsNotNull | _: sources.AlwaysTrue | _: sources.AlwaysFalse => Set.empty
      case _: sources.StringStartsWith | _: sources.StringEndsWith | _: sources.StringContains => Set.empty
      case sources.In(a, vs) =>
        // NaN IN (...) is true with a NaN listed, else null with a null listed, else false.
        val atNaN = if (vs.exists(nan)) Some(true) else if (vs.contains(null)) None else Some(false)
        if (vs.exists(v => v != null && floating(v)) && atNaN.contains(positive)) Set(a) else Set.empty
      case c =>
        comparison(c) match {
          case Some((a, v, atNaN)) => if (v != null && floating(v) && atNaN(v) == positive) Set(a) else Set.empty
          // A filter of another shape (one Spark may push in a later version): at risk on every column it names.
          case None => c.references.toSet
        }
    }
    filters.iterator.flatMap(walk(_, positive = true)).toSet
  }

  /** The conjuncts of `filters` (Spark pushes a conjunction) that cannot be true for NaN on any column. */
  def nanSafe(filters: Seq[sources.Filter]): Seq[sources.Filter] =
    filters.filter(f => nanSensitiveColumns(Seq(f)).isEmpty)
}
