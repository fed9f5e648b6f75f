package sparkbloom.api

import com.fasterxml.jackson.databind.ObjectMapper

/**
 * The JSON the Python package receives. Values are built as ordered Scala structures (`Json.obj` keeps
 * field order) and written with the Jackson that Spark ships; py4j then only ever carries a String.
 */
private[api] object Json {
  private[this] val mapper = new ObjectMapper()

  /** An object whose fields keep the order given; `None` values are written as null. */
  def obj(fields: (String, Any)*): java.util.LinkedHashMap[String, AnyRef] = {
    val out = new java.util.LinkedHashMap[String, AnyRef]()
    fields.foreach { case (k, v) => out.put(k, toJava(v)) }
    out
  }

  def write(value: Any): String = mapper.writeValueAsString(toJava(value))

  /** Parses `text` (the arguments of `SPARKBLOOM API`); a syntax error is an IllegalArgumentException. */
  def read(text: String): com.fasterxml.jackson.databind.JsonNode =
    try mapper.readTree(text)
    catch {
      case e: com.fasterxml.jackson.core.JsonProcessingException =>
        throw new IllegalArgumentException(s"The arguments are not JSON: ${e.getOriginalMessage}", e)
    }

  private def toJava(v: Any): AnyRef = v match {
    case null | None => null
    case Some(x) => toJava(x)
    case m: java.util.Map[_, _] => m
    case m: scala.collection.Map[_, _] =>
      val out = new java.util.LinkedHashMap[String, AnyRef]()
      m.foreach { case (k, x) => out.put(k.toString, toJava(x)) }
      out
    case s: Iterable[_] =>
      val out = new java.util.ArrayList[AnyRef]()
      s.foreach(x => out.add(toJava(x)))
      out
    case a: Array[_] => toJava(a.toSeq)
    case d: Double if d.isNaN || d.isInfinite => null // JSON has no NaN
    case x => x.asInstanceOf[AnyRef] // String, boxed numbers and booleans
  }
}
