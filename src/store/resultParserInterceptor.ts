import { SchemaValidationError, type Interceptor } from 'slonik';

/**
 * Checks every row of a `sql.type(schema)` query against its zod schema. slonik attaches the
 * schema to the query but leaves checking to an interceptor like this one; without it a column
 * whose type drifted (an int8 parsed as a BigInt, say) would pass unnoticed.
 */
export const resultParserInterceptor: Interceptor = {
  name: 'chargeonce.resultParser',
  transformRow: (context, query, row) => {
    const parser = context.resultParser;
    if (!parser) return row;
    const parsed = parser.safeParse(row);
    if (!parsed.success) throw new SchemaValidationError(query, row, parsed.error.issues);
    return parsed.data as typeof row;
  },
};
