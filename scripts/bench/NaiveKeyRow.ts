/** A key as the seed's `LoadKey` scans it into a struct: typed, not checked against a schema. */
export type NaiveKeyRow = {
  request_hash: string;
  recovery_point: string;
  charge_id: string;
  response_status: number | null;
  response_body: string | null;
};
